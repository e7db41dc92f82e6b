"""Platforms and GraphML written by others, and the flags of ``hcsim run`` that choose for them."""

from bad_inputs import case

_FOREIGN = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="Full">{props}
    <host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
    <link id="l" bandwidth="1GBps" latency="1us"/>
    <route src="a" dst="b"><link_ctn id="l"/></route>
  </zone>
</platform>
"""
_RUN = "run --workload allreduce --bytes 1MiB --iterations 1"

_GRAPHML_HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="v_id" for="node" attr.name="id" attr.type="string"/>
  <key id="g_gateways_json" for="graph" attr.name="gateways_json" attr.type="string"/>
  <graph id="G" edgedefault="undirected">"""
_GRAPHML_TAIL = """
  </graph>
</graphml>
"""
_LOST = (
    _GRAPHML_HEAD
    + """
    <data key="g_gateways_json">{"s": "s.gw"}</data>
    <node id="n0"/><node id="n1"/><edge source="n0" target="n1"/>"""
    + _GRAPHML_TAIL
)
_DUPLICATE = (
    _GRAPHML_HEAD
    + """
    <node id="n0"><data key="v_id">a</data></node><node id="n1"><data key="v_id">a</data></node>
    <edge source="n0" target="n1"/>"""
    + _GRAPHML_TAIL
)
_PARTLY = (
    _GRAPHML_HEAD
    + """
    <node id="n0"><data key="v_id">a</data></node><node id="n1"/>
    <edge source="n0" target="n1"/>"""
    + _GRAPHML_TAIL
)

CASES = [
    case(
        "check-xpus-from-property-none",
        "platform check {tmp}/p.xml --xpus-from property",
        "kind=xpu.*all-hosts",
        files={"p.xml": _FOREIGN.format(props="")},
    ),
    case(
        "run-xpus-from-property-none",
        _RUN + " --platform {tmp}/p.xml --xpus-from property",
        "--xpus-from all-hosts",
        files={"p.xml": _FOREIGN.format(props="")},
    ),
    case(
        "run-coherent-property-invalid",
        _RUN + " --platform {tmp}/p.xml",
        "coherent='maybe'.*true, false",
        files={"p.xml": _FOREIGN.format(props='<prop id="coherent" value="maybe"/>')},
    ),
    case(
        "run-mix-unused-then-bad-workload",
        "run --system cxl --xpus 16 --mix H100+A100 --iterations 1 --workload {tmp}/none.json",
        "none.json",
    ),  # the --mix warning waits for success: one line only
    case("run-xpus-from-with-system", _RUN + " --system cxl --xpus 8 --xpus-from all-hosts", "--xpus-from.*--platform"),
    case("run-network-model-file-with-system", _RUN + " --system cxl --xpus 8 --network-model file", "raw"),
    case("run-network-model-unknown", _RUN + " --system cxl --xpus 8 --network-model lv08", "invalid choice"),
    case(
        "graphml-numbered-names-lost",
        "platform compile {tmp}/t.graphml -o {tmp}/t.xml",
        "renamed.*'id' or 'name'",
        files={"t.graphml": _LOST},
    ),
    case(
        "graphml-kept-names-duplicate",
        "platform compile {tmp}/t.graphml -o {tmp}/t.xml",
        "'a'.*unique",
        files={"t.graphml": _DUPLICATE},
    ),
    case(
        "graphml-kept-names-partial",
        "platform draw --graphml {tmp}/t.graphml -o {tmp}/t.png",
        "'n1' has none",
        files={"t.graphml": _PARTLY},
    ),
]
