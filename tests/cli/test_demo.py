"""``hcsim demo``: refused sizes are checked up front, and a demo that fails midway leaves nothing behind."""

import pytest

import hcsim.demo as demo
from hcsim.errors import HcsimError


@pytest.mark.parametrize("xpus", [8, 12, 0, 264, 1_000_000_000])
def test_sizes_the_demo_cannot_show_are_refused_before_any_file(tmp_path, xpus):
    with pytest.raises(HcsimError, match=rf"--xpus {xpus} is invalid for the demo \(valid: a multiple of 8 from 16"):
        demo.run_demo(xpus, str(tmp_path / "out"))
    assert list(tmp_path.iterdir()) == []


def test_a_demo_failing_midway_removes_its_files_and_the_directories_it_made(tmp_path, monkeypatch):
    def fail(*_args, **_kwargs):
        raise HcsimError("simulated failure")

    monkeypatch.setattr(demo, "simulate_compute", fail)  # after the first platform is written
    with pytest.raises(HcsimError, match="simulated failure"):
        demo.run_demo(16, str(tmp_path / "new" / "demo"))
    assert list(tmp_path.iterdir()) == []


def test_a_failed_demo_keeps_a_directory_that_was_there(tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.setattr(demo, "simulate_compute", lambda *a, **k: (_ for _ in ()).throw(HcsimError("stop")))
    with pytest.raises(HcsimError, match="stop"):
        demo.run_demo(16, str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_nothing_appears_in_out_before_the_work_is_done(tmp_path, monkeypatch):
    out = tmp_path / "new" / "demo"
    real = demo.simulate_compute
    seen = []

    def watching(*args, **kwargs):
        seen.append(out.exists() or (tmp_path / "new").exists())
        return real(*args, **kwargs)

    monkeypatch.setattr(demo, "simulate_compute", watching)
    assert demo.run_demo(16, str(out)) == 0
    assert seen == [False, False]
    assert sorted(p.name for p in out.iterdir()) == ["cxl-16.png", "cxl-16.xml", "noncoherent-16.xml"]


def test_a_demo_failing_while_publishing_leaves_nothing(tmp_path, monkeypatch):
    import shutil

    real, copies = shutil.copyfile, []

    def second_fails(src, dst):
        copies.append(src)
        if len(copies) == 2:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(demo.shutil, "copyfile", second_fails)
    with pytest.raises(OSError):
        demo.run_demo(16, str(tmp_path / "new" / "demo"))
    assert list(tmp_path.iterdir()) == []
