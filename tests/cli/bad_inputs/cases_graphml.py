"""GraphML topologies (``platform compile``, ``platform draw --graphml``) that must be refused in one line."""

from bad_inputs import case
from bad_inputs.formats import BILLION_LAUGHS_DTD, LINK, SWITCH, XPU, XXE_DTD, graphml, link, node

COMPILE = "platform compile {tmp}/t.graphml -o {tmp}/t.xml"


def _edge(**overrides):  # a graph whose first link (a--sw) carries ``overrides``
    return {"t.graphml": graphml(edges=[("a", "sw", link(**overrides)), ("b", "sw", LINK)])}


def _xpu(**overrides):  # a graph whose XPU ``a`` carries ``overrides``
    return {"t.graphml": graphml(nodes={"a": node(**overrides), "b": XPU, "sw": SWITCH})}


CASES = [
    case("graphml-bandwidth-missing", COMPILE, r"'a'--'sw'.*no bandwidth", files=_edge(bandwidth=None)),
    case("graphml-bandwidth-zero", COMPILE, r"'a'--'sw'.*bandwidth.*>= 1", files=_edge(bandwidth=0.0)),
    case("graphml-bandwidth-negative", COMPILE, r"bandwidth.*>= 1", files=_edge(bandwidth=-1e9)),
    case("graphml-bandwidth-nan", COMPILE, r"bandwidth.*got nan", files=_edge(bandwidth=float("nan"))),
    case("graphml-bandwidth-inf", COMPILE, r"bandwidth.*finite", files=_edge(bandwidth=float("inf"))),
    case("graphml-bandwidth-denormal", COMPILE, r"bandwidth.*>= 1 B/s", files=_edge(bandwidth=5e-300)),
    case(
        "graphml-bandwidth-bad-unit",
        COMPILE,
        r"bandwidth.*unknown unit.*128GBananas",
        files=_edge(bandwidth="128GBananas"),
    ),
    case("graphml-bandwidth-word", COMPILE, r"bandwidth.*cannot parse 'fast'", files=_edge(bandwidth="fast")),
    case("graphml-latency-negative", COMPILE, r"latency.*>= 0", files=_edge(latency=-1e-6)),
    case("graphml-latency-1e300", COMPILE, r"latency.*at most", files=_edge(latency=1e300)),
    case("graphml-latency-bad-unit", COMPILE, r"latency.*unknown time unit", files=_edge(latency="5 fortnights")),
    case("graphml-lanes-string", COMPILE, r"lanes.*'four'.*integer", files=_edge(lanes="four")),
    case("graphml-lanes-nan", COMPILE, r"lanes.*nan.*integer", files=_edge(lanes=float("nan"))),
    case("graphml-lanes-fraction", COMPILE, r"lanes.*2.5.*integer", files=_edge(lanes=2.5)),
    case("graphml-lanes-zero", COMPILE, r"lanes.*>= 1", files=_edge(lanes=0)),
    case("graphml-rank-string", COMPILE, r"rank.*'first'.*integer", files=_xpu(rank="first")),
    case("graphml-rank-nan", COMPILE, r"rank.*nan.*integer", files=_xpu(rank=float("nan"))),
    case("graphml-flops-zero", COMPILE, r"XPU 'a'.*fp32_flops", files=_xpu(fp32_flops=0.0)),
    case("graphml-flops-missing", COMPILE, r"XPU 'a'.*fp16_flops", files=_xpu(fp16_flops=None)),
    case("graphml-memory-negative", COMPILE, r"XPU 'a'.*memory", files=_xpu(memory=-1.0)),
    case("graphml-kind-unknown", COMPILE, r"kind 'gpu' is unknown.*xpu, memory, switch", files=_xpu(kind="gpu")),
    case(
        "graphml-switch-kind-unknown",
        COMPILE,
        r"switch_kind 'nvlink' is unknown",
        files={"t.graphml": graphml(nodes={"a": XPU, "b": XPU, "sw": {"kind": "switch", "switch_kind": "nvlink"}})},
    ),
    case(
        "graphml-self-loop",
        COMPILE,
        r"'sw'--'sw'.*itself",
        files={"t.graphml": graphml(edges=[("a", "sw", LINK), ("b", "sw", LINK), ("sw", "sw", LINK)])},
    ),
    case(
        "graphml-isolated-node",
        COMPILE,
        r"node 'c' has no link",
        files={"t.graphml": graphml(nodes={"a": XPU, "b": XPU, "c": XPU, "sw": SWITCH})},
    ),
    case(
        "graphml-disconnected-xpus",
        COMPILE,
        r"no path between 'a' and 'b'",
        files={
            "t.graphml": graphml(
                nodes={"a": XPU, "b": XPU, "s1": SWITCH, "s2": SWITCH}, edges=[("a", "s1", LINK), ("b", "s2", LINK)]
            )
        },
    ),
    case(
        "graphml-no-xpu",
        COMPILE,
        r"no XPU",
        files={"t.graphml": graphml(nodes={"s1": SWITCH, "s2": SWITCH}, edges=[("s1", "s2", LINK)])},
    ),
    case("graphml-no-nodes", COMPILE, r"topology is empty", files={"t.graphml": graphml(nodes={}, edges=[])}),
    case(
        "graphml-duplicate-node",
        COMPILE,
        r"node 'a' is a duplicate",
        files={"t.graphml": graphml().replace('<node id="b">', '<node id="a">', 1)},
    ),
    case(
        "graphml-duplicate-link",
        COMPILE,
        r"'a'--'sw' is a duplicate",
        files={"t.graphml": graphml(edges=[("a", "sw", LINK), ("sw", "a", LINK), ("b", "sw", LINK)])},
    ),
    case(
        "graphml-link-name-collision-dashes",
        COMPILE,
        r"SimGrid link name 'a--b--c'.*'--'",
        files={
            "t.graphml": graphml(
                nodes={"a": XPU, "b--c": XPU, "a--b": XPU, "c": XPU},
                edges=[("a", "b--c", LINK), ("a--b", "c", LINK), ("a", "c", LINK)],
            )
        },
    ),
    case(
        "graphml-link-name-collision-switch",
        COMPILE,
        r"SimGrid link name 'a--b--sw'",
        files={
            "t.graphml": graphml(
                nodes={"a--b": XPU, "b": XPU, "a": XPU, "b--sw": SWITCH, "sw": SWITCH},
                edges=[("a--b", "sw", LINK), ("a", "b--sw", LINK), ("b", "sw", LINK), ("sw", "b--sw", LINK)],
            )
        },
    ),
    case(
        "graphml-zone-without-gateway",
        COMPILE,
        r"zone 'r0' has no gateway",
        files={"t.graphml": graphml(nodes={"a": {**XPU, "zone": "r0"}, "b": XPU, "sw": SWITCH})},
    ),
    case(
        "graphml-gateways-json-garbage",
        COMPILE,
        r"gateways_json.*JSON",
        files={"t.graphml": graphml(graph={"gateways_json": "{not json"})},
    ),
    case(
        "graphml-routes-json-shape",
        COMPILE,
        r"routes_json",
        files={"t.graphml": graphml(graph={"routes_json": "[1, 2]"})},
    ),
    case("graphml-empty-file", COMPILE, r"t\.graphml.*cannot be read", files={"t.graphml": ""}),
    case("graphml-binary-garbage", COMPILE, r"t\.graphml.*cannot be read", files={"t.graphml": bytes(range(256)) * 8}),
    case("graphml-not-graphml", COMPILE, r"t\.graphml", files={"t.graphml": "<html><body>hello</body></html>\n"}),
    case(
        "graphml-billion-laughs",
        COMPILE,
        r"t\.graphml",
        files={
            "t.graphml": graphml(
                nodes={"a": {**XPU, "device": "&lol9;"}, "b": XPU, "sw": SWITCH}, doctype=BILLION_LAUGHS_DTD
            )
        },
        timeout=30,
    ),
    case(
        "graphml-xxe",
        COMPILE,
        r"t\.graphml.*entit",
        files={"t.graphml": graphml(nodes={"a": {**XPU, "device": "&xxe;"}, "b": XPU, "sw": SWITCH}, doctype=XXE_DTD)},
    ),
    case("graphml-missing", COMPILE, r"t\.graphml' does not exist"),
    case("graphml-is-directory", "platform compile {tmp} -o {tmp}/t.xml", r"is a directory"),
    case("graphml-unreadable", "platform compile /proc/self/mem -o {tmp}/t.xml", r"/proc/self/mem.*cannot be read"),
    case(
        "graphml-draw-bad",
        "platform draw --graphml {tmp}/t.graphml -o {tmp}/t.png",
        r"bandwidth",
        files=_edge(bandwidth=0.0),
    ),
]

_STAR = {f"x{i}": XPU for i in range(2100)} | {"sw": SWITCH}
CASES.append(
    case(
        "graphml-flat-zone-too-large",
        COMPILE,
        r"zone 'hcsim' holds 2100 hosts.*at most 2048 hosts per zone",
        files={"t.graphml": graphml(nodes=_STAR, edges=[(f"x{i}", "sw", LINK) for i in range(2100)])},
        timeout=60,
    )
)
