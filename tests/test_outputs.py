"""hcsim.outputs: the one CSV / JSON / figure / Chrome-trace writer, atomic everywhere."""

from __future__ import annotations

import csv
import io
import json
import math
import os

import numpy as np
import pytest

from hcsim.outputs import ChromeTrace, Summary, csv_text, json_text, save_figure, write_csv, write_json

ROWS = [
    {"b": 0.1, "a": 1, "c": "x,y"},
    {"a": 2, "b": np.float64(1 / 3), "d": True},
]


def test_csv_matches_dictwriter_byte_for_byte(tmp_path):
    """The studies' files were written by csv.DictWriter; the one writer must give the same bytes."""
    columns = ["a", "b", "c", "d"]
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=columns)
    w.writeheader()
    w.writerows(ROWS)
    write_csv(tmp_path / "t.csv", ROWS, columns)
    assert (tmp_path / "t.csv").read_bytes() == buf.getvalue().encode()
    assert (tmp_path / "t.csv").read_bytes().startswith(b'a,b,c,d\r\n1,0.1,"x,y",\r\n')


def test_csv_columns_default_to_keys_in_first_seen_order():
    text = csv_text(ROWS, line_end="\n")
    assert text.splitlines()[0] == "b,a,c,d"
    assert text.splitlines()[2] == f"{1 / 3!r},2,,True"


def test_csv_sequences_nan_and_unknown_keys():
    assert csv_text([(1, math.nan, 2.5)], ["n", "x", "y"], line_end="\n", nan="") == "n,x,y\n1,,2.5\n"
    assert csv_text([(1, math.nan)], ["n", "x"], line_end="\n") == "n,x\n1,nan\n"
    with pytest.raises(ValueError, match="not columns"):
        csv_text([{"a": 1, "z": 2}], ["a"])


def test_json_sorted_indented_newline(tmp_path):
    write_json(tmp_path / "s.json", {"b": 1, "a": [1.5]})
    assert (tmp_path / "s.json").read_text() == '{\n "a": [\n  1.5\n ],\n "b": 1\n}\n'
    assert json_text({"b": 1, "a": 2}, indent=None) == '{"a":2,"b":1}\n'


def test_writes_are_atomic(tmp_path):
    """A failure while writing leaves the old file whole and no temporary file behind."""

    class Failing:
        def savefig(self, path, **kw):  # noqa: ANN001, ANN003, ANN202
            with open(path, "w") as f:
                f.write("half a picture")
            raise RuntimeError("disk full")

    path = tmp_path / "f.png"
    write_csv(path, [{"a": 1}])
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="disk full"):
        save_figure(Failing(), path, close=False)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["f.png"]


def test_save_figure_is_atomic_and_closes(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    save_figure(fig, tmp_path / "f.png", dpi=50)
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert os.listdir(tmp_path) == ["f.png"] and not plt.fignum_exists(fig.number)


def test_chrome_trace_integer_ids_metadata_and_categories(tmp_path):
    trace = ChromeTrace()
    trace.add("a", "compute", 0.0, 1e-3, process="node1", thread="gpu3")
    trace.add("b", "comm", 1e-3, 2e-3, process="node0", thread="gpu0", args={"bytes": 8})
    trace.add("c", "compute", 2e-3, 3e-3, process="node1", thread="gpu3")
    trace.write(tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    events = doc["traceEvents"]
    assert all(isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["cat"] for e in events)
    names = {(e["name"], e["pid"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
    assert names[("process_name", 1, 0)] == {"name": "node1"} and names[("process_name", 2, 0)] == {"name": "node0"}
    assert names[("thread_name", 1, 1)] == {"name": "gpu3"} and names[("thread_name", 2, 1)] == {"name": "gpu0"}
    slices = [e for e in events if e["ph"] == "X"]
    assert [(e["name"], e["pid"], e["tid"]) for e in slices] == [("a", 1, 1), ("b", 2, 1), ("c", 1, 1)]
    assert slices[1]["ts"] == pytest.approx(1000.0) and slices[1]["dur"] == pytest.approx(1000.0)


def test_summary_reads_old_key_names_but_stores_new_ones():
    s = Summary({"makespan_s": 2.0}, aliases={"makespan": "makespan_s", "gone": "nothing"})
    assert s["makespan"] == 2.0 and json.loads(json.dumps(s)) == {"makespan_s": 2.0}
    with pytest.raises(KeyError):
        s["gone"]
