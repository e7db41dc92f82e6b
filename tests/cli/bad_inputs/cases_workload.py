"""Workload JSON (``run --workload FILE``) that must be refused before or while it runs, in one line."""

from bad_inputs import case
from bad_inputs.formats import START, compute, p2p, workload_json

RUN = "run --system ring --xpus 2 --iterations 2 --workload {tmp}/w.json"


def _w(nodes, edges=()):  # noqa: ANN001, ANN202
    return {"w.json": workload_json(nodes, list(edges))}


CASES = [
    case(
        "workload-deadlock-cycle",
        RUN,
        r"deadlock.*'a'.*'b'.*skip_first_iteration",
        files=_w([START, compute("a"), compute("b")], [("c", "a"), ("a", "b"), ("b", "a")]),
    ),
    case("workload-flops-nan", RUN, r"'c'.*flops.*nan", files=_w([compute("c", is_start=True, flops=float("nan"))])),
    case("workload-flops-string", RUN, r"'c'.*flops.*'lots'", files=_w([compute("c", is_start=True, flops="lots")])),
    case("workload-bytes-negative", RUN, r"'p'.*bytes.*-1", files=_w([START, p2p("p", bytes=-1)], [("c", "p")])),
    case("workload-bytes-1e300", RUN, r"'p'.*bytes.*at most", files=_w([START, p2p("p", bytes=1e300)], [("c", "p")])),
    case("workload-bytes-2-64", RUN, r"'p'.*bytes.*at most", files=_w([START, p2p("p", bytes=2**64)], [("c", "p")])),
    case(
        "workload-bytes-huge-int", RUN, r"'p'.*bytes.*at most", files=_w([START, p2p("p", bytes=10**400)], [("c", "p")])
    ),
    case("workload-bytes-bool", RUN, r"'p'.*bytes.*True", files=_w([START, p2p("p", bytes=True)], [("c", "p")])),
    case(
        "workload-mem-bytes-huge",
        RUN,
        r"'c'.*mem_bytes.*at most",
        files=_w([compute("c", is_start=True, mem_bytes=1e300)]),
    ),
    case(
        "workload-unknown-host",
        RUN,
        r"'c'.*'nowhere'.*unknown host",
        files=_w([compute("c", is_start=True, location="nowhere")]),
    ),
    case(
        "workload-scope-not-list",
        RUN,
        r"'p'.*scope.*list",
        files=_w([START, p2p("p", scope="xpu0,xpu1")], [("c", "p")]),
    ),
    case(
        "workload-kind-unknown",
        RUN,
        r"kind 'allgatherv' is unknown",
        files=_w([START, p2p("p", kind="allgatherv")], [("c", "p")]),
    ),
    case(
        "workload-precision-unknown", RUN, r"precision 'fp8'", files=_w([compute("c", is_start=True, precision="fp8")])
    ),
    case(
        "workload-type-unknown",
        RUN,
        r"type 'memcpy' is unknown",
        files=_w([compute("c", is_start=True, type="memcpy")]),
    ),
    case("workload-no-start", RUN, r"no start vertex", files=_w([compute("c")])),
    case("workload-is-start-string", RUN, r"'c'.*is_start.*true or false", files=_w([compute("c", is_start="yes")])),
    case(
        "workload-skip-string",
        RUN,
        r"skip_first_iteration.*true or false",
        files=_w([START, compute("d")], [("c", "d", "no")]),
    ),
    case(
        "workload-edge-unknown-vertex",
        RUN,
        r"edge 'c' -> 'ghost'.*'ghost'.*not a vertex",
        files=_w([START], [("c", "ghost")]),
    ),
    case("workload-duplicate-vertex", RUN, r"vertex 'c' is a duplicate", files=_w([START, START])),
    case("workload-nodes-not-list", RUN, r"'nodes'.*list", files={"w.json": '{"nodes": 5}'}),
    case("workload-node-not-object", RUN, r"node.*object", files={"w.json": '{"nodes": ["a", "b"]}'}),
    case("workload-node-without-id", RUN, r"'id'", files={"w.json": '{"nodes": [{"type": "compute"}]}'}),
    case("workload-edges-not-objects", RUN, r"edge.*object", files={"w.json": '{"nodes": [], "edges": [1, 2]}'}),
    case("workload-edges-dict", RUN, r"'edges'.*list", files={"w.json": '{"nodes": [], "edges": {"x": 1}}'}),
    case("workload-top-level-list", RUN, r"node-link", files={"w.json": "[1, 2]"}),
    case("workload-deep-nesting", RUN, r"w\.json.*nested", files={"w.json": "[" * 100000 + "]" * 100000}),
    case("workload-not-json", RUN, r"not valid JSON", files={"w.json": "nodes: []\n"}),
    case("workload-non-utf8", RUN, r"not valid JSON|UTF-8", files={"w.json": b'{"nodes": ["\xff\xfe"]}'}),
    case("workload-empty", RUN, r"not valid JSON", files={"w.json": ""}),
    case("workload-is-directory", "run --system ring --xpus 2 --iterations 1 --workload {tmp}", r"directory"),
    case(
        "workload-unreadable",
        "run --system ring --xpus 2 --iterations 1 --workload /proc/self/mem",
        r"/proc/self/mem.*cannot be read",
    ),
]
