"""MSCCL-IR files as collective algorithms: the shared ring, our examples, and bad files."""

from __future__ import annotations

import os
import re

import pytest

from hcsim.collectives import algorithm, build_schedule
from hcsim.collectives.msccl import parse_msccl
from hcsim.engine import simulate
from hcsim.errors import HcsimError
from hcsim.platform import star
from hcsim.workload import Workload

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_RING = os.path.join(  # ASTRA-sim's MSCCL-IR ring, shipped in tests/data/astra-sim (MIT License; see NOTICE)
    ROOT, "tests", "data", "astra-sim", "system", "custom_collectives",
    "custom_ring_allreduce_8npus_1MB", "custom_allreduce.xml",
)  # fmt: skip
EXAMPLES = os.path.join(ROOT, "examples", "collectives")
ALLGATHER_RD = os.path.join(EXAMPLES, "allgather_recursive_doubling_4gpus.xml")
RING_2CH = os.path.join(EXAMPLES, "allreduce_ring_2ch_4gpus.xml")
assert os.path.exists(SHARED_RING), SHARED_RING


BW, LAT = 50e9, 2e-6


def run(compiled, n: int, kind: str, nbytes: float, alg: str) -> float:
    path = compiled(star(n, bandwidth=BW, latency=LAT))
    w = Workload()
    w.add_comm("c", nbytes, kind, [f"xpu{i}" for i in range(n)], algorithm=alg, is_start=True)
    return simulate(path, w).makespan


def test_the_shared_ring_file_is_a_complete_allreduce_that_runs_like_the_builtin_ring(compiled):
    """One threadblock per GPU alternating send and receive: each send waits for the previous
    send and the receive before it, so it *is* hcsim's ring (same flows, same dependencies):
    2(N-1) = 14 rounds of S/8 on a star, 2(N-1)(2L + S/(N B))."""
    n, size = 8, 8e6
    sch = build_schedule("allreduce", SHARED_RING, [f"xpu{i}" for i in range(n)], size)  # validated + checked
    assert (len(sch.flows), sch.steps, sch.shards) == (2 * (n - 1) * n, 2 * (n - 1), n)
    ring = build_schedule("allreduce", "ring", [f"xpu{i}" for i in range(n)], size)
    key = sorted((f.src, f.dst, f.nbytes, len(f.after)) for f in ring.flows)  # (its shards start one step on)
    assert sorted((f.src, f.dst, f.nbytes, len(f.after)) for f in sch.flows) == key
    t = run(compiled, n, "allreduce", size, SHARED_RING)
    assert t == pytest.approx(2 * (n - 1) * (2 * LAT + size / (n * BW)), rel=1e-9)
    assert t == pytest.approx(run(compiled, n, "allreduce", size, "ring"), rel=1e-9)


def test_recursive_doubling_allgather_example(compiled):
    """log2(4) = 2 rounds of S/4 then S/2 on a star: 2 (2L) + 3 S / (4 B)."""
    size = 4e6
    sch = build_schedule("allgather", ALLGATHER_RD, ["a", "b", "c", "d"], size)
    assert (len(sch.flows), sch.steps) == (8, 2)
    assert run(compiled, 4, "allgather", size, ALLGATHER_RD) == pytest.approx(4 * LAT + 3 * size / (4 * BW), rel=1e-9)


def test_two_channel_bidirectional_ring_example(compiled):
    """Two rings of S/8 chunks, one each way; every star link carries both: 6 (2L + S/(4B))."""
    size = 8e6
    sch = build_schedule("allreduce", RING_2CH, ["a", "b", "c", "d"], size)
    assert (len(sch.flows), sch.steps) == (48, 6)
    t = run(compiled, 4, "allreduce", size, RING_2CH)
    assert t == pytest.approx(6 * (2 * LAT + size / (4 * BW)), rel=1e-9)


def test_a_workload_json_names_an_msccl_file(tmp_path):
    w = Workload()
    w.add_comm("ag", 4e6, "allgather", ["a", "b", "c", "d"], algorithm=ALLGATHER_RD, is_start=True)
    path = tmp_path / "w.json"
    w.to_json(path)
    assert Workload.from_json(path).nodes["ag"]["algorithm"] == ALLGATHER_RD
    assert algorithm("allgather", ALLGATHER_RD).doc.startswith("MSCCL-IR allgather 'allgather_recursive_doubling'")


# A 2-GPU allreduce: each GPU sends the chunk the other reduces, then the reduced chunk back.
BASE = """<algo name="tiny" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="r" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""


def edit(gpu: int | None = None, step: int | None = None, old: str = "", new: str = "") -> str:
    """BASE with ``old`` replaced by ``new`` (inside one step of gpu ``gpu`` when given)."""
    if gpu is None:
        assert old in BASE
        return BASE.replace(old, new, 1)
    head, _, tail = BASE.partition(f'<gpu id="{gpu}"')
    line = re.search(rf'<step s="{step}" [^>]*>', tail).group(0)
    assert old in line
    return head + f'<gpu id="{gpu}"' + tail.replace(line, line.replace(old, new), 1)


SECOND_TB = """</tb>
    <tb id="1" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    """

# (case, file text (None: no file), kind, ranks, error pattern)
# fmt: off
BAD = [
    ("wrong ngpus", BASE, "allreduce", 3, r"written for 2 GPUs, the scope has 3 ranks \(valid: a scope of 2 ranks\)"),
    ("coll mismatch", BASE, "allgather", 2, r'coll="allreduce" does not match the kind asked for, allgather'),
    ("kind MSCCL lacks", BASE, "p2p", 2, r"valid: none: MSCCL-IR has no p2p"),
    ("unsupported coll", edit(old='coll="allreduce"', new='coll="gather"'), "allreduce", 2, r"coll='gather' is not"),
    ("unmatched send", edit(1, 3, 'type="r"', 'type="nop"'), "allreduce", 2,
     r"gpu 0 tb 0 step 2 \(s\) sends to gpu 1 on channel 0, which receives only 1 of 2"),
    ("unmatched receive", edit(0, 0, 'type="s"', 'type="nop"'), "allreduce", 2,
     r"gpu 1 tb 0 step 3 \(r\) receives from gpu 0 on channel 0, which sends only 1 of 2"),
    ("dependency cycle", edit(0, 0, 'depid="-1" deps="-1"', 'depid="0" deps="2"'), "allreduce", 2,
     r"gpu \d tb 0 step \d \(\w+\) is in a dependency cycle"),
    ("missing dependency", edit(0, 1, 'depid="-1" deps="-1"', 'depid="3" deps="0"'), "allreduce", 2,
     r"gpu 0 tb 0 step 1 \(rrc\) waits for step 0 of tb 3 on gpu 0, which does not exist"),
    ("bad step type", edit(1, 2, 'type="s"', 'type="rrx"'), "allreduce", 2,
     r"gpu 1 tb 0 step 2 has type='rrx' \(valid: s, r, rcs"),
    ("peer outside the scope", edit(old='send="0" recv="0"', new='send="5" recv="0"'), "allreduce", 2,
     r"gpu 1 tb 0 has send=5 \(valid: -1 or another gpu, 0..1\)"),
    ("offset out of range", edit(0, 0, 'srcoff="1"', 'srcoff="2"'), "allreduce", 2,
     r"gpu 0 tb 0 step 0 \(s\) uses chunks 2..2 of buffer 'i', which has 2"),
    ("incomplete allreduce", edit(0, 2, 'srcoff="0"', 'srcoff="1"'), "allreduce", 2,
     r"is not a complete allreduce: gpu 1 ends with 1 of 2 contributions to shard 0 .*no step sends it to gpu 1"),
    ("garbage XML", BASE[:150], "allreduce", 2, r"is not well-formed XML"),
    ("wrong root", "<graph/>", "allreduce", 2, r"the root element is <graph> \(valid: <algo>\)"),
    ("missing attribute", edit(old=' nchunksperloop="2"', new=""), "allreduce", 2,
     r"<algo> has no 'nchunksperloop' attribute"),
    ("missing file", None, "allreduce", 2, r"does not exist \(valid: the path of an MSCCL-IR .xml file\)"),
    ("chunk count mismatch", edit(1, 3, 'cnt="1"', 'cnt="2"'), "allreduce", 2,
     r"gpu 0 tb 0 step 2 \(s\) sends 1 chunks but its matching receive gpu 1 tb 0 step 3 \(r\) takes 2"),
    ("two threadblocks on one connection", BASE.replace("</tb>\n  </gpu>", SECOND_TB + "</tb>\n  </gpu>", 1),
     "allreduce", 2, r"gpu 0 tb 0 and tb 1 both send to gpu 1 on channel 0 \(valid: one threadblock per peer"),
]
# fmt: on


@pytest.mark.parametrize("case, text, kind, n, pattern", BAD, ids=[b[0] for b in BAD])
def test_bad_msccl_files_get_one_line_errors_naming_the_file_and_item(tmp_path, case, text, kind, n, pattern):
    path = tmp_path / "bad.xml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(HcsimError) as e:
        build_schedule(kind, str(path), [f"x{i}" for i in range(n)], 1e6)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg
    assert re.search(pattern, msg), msg


def test_the_base_of_the_bad_cases_is_good(tmp_path):
    path = tmp_path / "good.xml"
    path.write_text(BASE)
    assert len(build_schedule("allreduce", str(path), ["a", "b"], 1e6).flows) == 4


def test_entities_are_not_expanded(tmp_path):
    """No external entities (XXE) and no internal expansion: the file is read as it stands."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    path = tmp_path / "xxe.xml"
    doctype = f'<!DOCTYPE algo [<!ENTITY x SYSTEM "file://{secret}">]>\n'
    path.write_text(doctype + BASE.replace('name="tiny"', 'name="&x;"'))
    try:
        prog = parse_msccl(str(path), "allreduce")
    except HcsimError as e:
        assert "TOPSECRET" not in str(e)
    else:
        assert "TOPSECRET" not in prog.name


def program(coll: str, n: int, chunks: int, sizes: tuple[int, int, int], tbs: dict) -> str:
    """MSCCL-IR text: ``tbs[gpu]`` = [(send, recv, chan, [(type, srcbuf, srcoff, dstbuf, dstoff, cnt), ...])]."""
    out = [f'<algo name="t" proto="Simple" nchannels="1" nchunksperloop="{chunks}" ngpus="{n}" coll="{coll}">']
    for g in range(n):
        out.append(f'<gpu id="{g}" i_chunks="{sizes[0]}" o_chunks="{sizes[1]}" s_chunks="{sizes[2]}">')
        for t, (send, recv, chan, steps) in enumerate(tbs[g]):
            out.append(f'<tb id="{t}" send="{send}" recv="{recv}" chan="{chan}">')
            for k, (typ, sb, so, db, do, cnt) in enumerate(steps):
                out.append(
                    f'<step s="{k}" type="{typ}" srcbuf="{sb}" srcoff="{so}" dstbuf="{db}" dstoff="{do}" cnt="{cnt}" '
                    'depid="-1" deps="-1" hasdep="0"/>'
                )
            out.append("</tb>")
        out.append("</gpu>")
    return "\n".join([*out, "</algo>"])


def ring_reduce_scatter(n: int, first: int = -1) -> str:
    """Rank r sends chunk r-1 (r + first), then receives-reduces-sends N-2 times, then keeps chunk r in its output."""
    tbs = {}
    for r in range(n):
        steps = [("s", "i", (r + first) % n, "i", (r + first) % n, 1)]
        steps += [("rrs", "i", (r - 1 - j) % n, "i", (r - 1 - j) % n, 1) for j in range(1, n - 1)]
        steps.append(("rrc", "i", r, "o", 0, 1))
        tbs[r] = [((r + 1) % n, (r - 1) % n, 0, steps)]
    return program("reducescatter", n, n, (n, 1, 0), tbs)


def direct_alltoall(n: int) -> str:
    """One threadblock per peer: send it input chunk p, receive its chunk into output chunk p; keep your own."""
    tbs = {}
    for r in range(n):
        peers = [p for p in range(n) if p != r]
        tbs[r] = [(p, p, 0, [("s", "i", p, "o", p, 1), ("r", "i", p, "o", p, 1)]) for p in peers]
        tbs[r][0][3].insert(0, ("cpy", "i", r, "o", r, 1))
    return program("alltoall", n, n, (n, n, 0), tbs)


def scratch_allreduce() -> str:
    """2 GPUs: receive the peer's copy of my chunk into scratch, reduce it into my input, send it back."""
    tbs = {
        r: [(1 - r, 1 - r, 0, [
            ("s", "i", 1 - r, "i", 1 - r, 1),
            ("r", "s", 0, "s", 0, 1),
            ("re", "s", 0, "i", r, 1),
            ("s", "i", r, "i", r, 1),
            ("r", "i", 1 - r, "i", 1 - r, 1),
        ])]
        for r in range(2)
    }  # fmt: skip
    return program("allreduce", 2, 2, (2, 0, 1), tbs)


def test_reduce_scatter_alltoall_and_scratch_programs_pass_the_check_and_match_closed_forms(tmp_path, compiled):
    n, size = 4, 4e6
    rs, a2a, scr = tmp_path / "rs.xml", tmp_path / "a2a.xml", tmp_path / "scratch.xml"
    rs.write_text(ring_reduce_scatter(n))
    a2a.write_text(direct_alltoall(n))
    scr.write_text(scratch_allreduce())
    assert build_schedule("alltoall", str(a2a), list("abcd"), size).shards == n * n
    assert build_schedule("allreduce", str(scr), list("ab"), size).shards == 2
    # ring reduce-scatter: N-1 steps of S/N; direct all-to-all: N-1 flows of S/N out of every rank at once
    t = run(compiled, n, "reduce_scatter", size, str(rs))
    assert t == pytest.approx((n - 1) * (2 * LAT + size / (n * BW)), rel=1e-9)
    assert t == pytest.approx(run(compiled, n, "reduce_scatter", size, "ring"), rel=1e-9)
    assert run(compiled, n, "alltoall", size, str(a2a)) == pytest.approx(2 * LAT + (n - 1) * size / (n * BW), rel=1e-9)
    # 2 GPUs, two dependent exchanges of S/2 each
    assert run(compiled, 2, "allreduce", size, str(scr)) == pytest.approx(2 * (2 * LAT + size / 2 / BW), rel=1e-9)


def test_a_reduce_scatter_that_starts_with_the_wrong_chunk_fails_the_check(tmp_path):
    """Same flows, same timing, but the first sends carry chunk r, not r-1: nobody ends with a full shard.
    (The check follows shards to GPUs, not into buffers: what reached a GPU counts as held.)"""
    path = tmp_path / "rs.xml"
    path.write_text(ring_reduce_scatter(4, first=0))
    with pytest.raises(HcsimError, match=r"is not a complete reduce_scatter: gpu 0 ends with 3 of 4 contributions"):
        build_schedule("reduce_scatter", str(path), list("abcd"), 1e6)


def test_a_bad_file_in_a_workload_json_is_named_with_its_vertex(tmp_path):
    w = Workload()
    w.add_comm("ar", 1e6, "allreduce", ["a", "b"], is_start=True)
    path = tmp_path / "w.json"
    w.to_json(path)
    path.write_text(path.read_text().replace('"ring"', '"nope.xml"'))
    with pytest.raises(HcsimError, match=r"^communication vertex 'ar': MSCCL-IR file 'nope.xml' does not exist"):
        Workload.from_json(path)
