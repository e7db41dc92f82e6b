"""Foreign formats: Chakra traces and AICB files for ``hcsim run``, ASTRA-sim and InfraGraph for ``platform import``."""

from google.protobuf.internal.encoder import _VarintBytes

from bad_inputs import case
from hcsim.formats.chakra import et_def_pb2 as pb

RUN = "run --system star --xpus 4 --iterations 1 --csv {tmp}/out.csv --workload"


def et(*nodes: object) -> bytes:
    """One rank file: a GlobalMetadata then ``nodes``, each preceded by its varint length."""
    msgs = [pb.GlobalMetadata(version="0.0.4").SerializeToString()] + [n.SerializeToString() for n in nodes]
    return b"".join(_VarintBytes(len(m)) + m for m in msgs)


def allreduce(size: int = 4096, pg: str = "") -> object:
    n = pb.Node(id=0, name="ar", type=pb.COMM_COLL_NODE)
    n.attr.add(name="comm_type", int64_val=pb.ALL_REDUCE)
    n.attr.add(name="comm_size", int64_val=size)
    if pg:
        n.attr.add(name="pg_name", string_val=pg)
    return n


AR = et(allreduce())
HGX = "topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400.0 ]\nlatency: [ 936.25 ]\n"
IG_NO_BW = """name: bare
devices:
  - name: box
    components: [{name: xpu, choice: xpu, count: 2}, {name: sw, choice: switch, count: 1}]
    links: [{name: wire}]
    edges: [{ep1: {component: xpu}, ep2: {component: "sw[0]"}, scheme: many2many, link: wire}]
instances: [{name: box, device: box, count: 1}]
"""
GTS_LINK = "{name: wire, physical: {bandwidth: {choice: gigatransfers_per_second, gigatransfers_per_second: 16}}}"
AICB_OK_HEADER = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4\n"
LAYER = "l\t-1\t100\tALLREDUCE\t4096\t100\tNONE\t0\t100\tALLREDUCE\t4096\t10\n"

CASES = [
    case("chakra-truncated", f"{RUN} {{tmp}}/t", "t.1.et.*corrupt", files={"t.0.et": AR, "t.1.et": AR[:-3]}),
    case("chakra-empty-rank", f"{RUN} {{tmp}}/t", "t.1.et' is empty", files={"t.0.et": AR, "t.1.et": b""}),
    case("chakra-missing-rank", f"{RUN} {{tmp}}/t", r"t\.1\.et is missing", files={"t.0.et": AR, "t.2.et": AR}),
    case(
        "chakra-more-ranks-than-xpus",
        f"{RUN} {{tmp}}/t",
        "5 ranks but the platform has 4 XPUs",
        files={f"t.{r}.et": AR for r in range(5)},
    ),  # fmt: skip
    case(
        "chakra-unknown-node-type",
        f"{RUN} {{tmp}}/t",
        "MEM_STORE_NODE is not supported",
        files={f"t.{r}.et": et(pb.Node(id=0, name="st", type=pb.MEM_STORE_NODE)) for r in range(2)},
    ),  # fmt: skip
    case("chakra-sizes-differ", f"{RUN} {{tmp}}/t", "differs", files={"t.0.et": AR, "t.1.et": et(allreduce(8192))}),
    case(
        "chakra-undeclared-group",
        f"{RUN} {{tmp}}/t",
        "process group '4' is not declared",
        files={f"t.{r}.et": et(allreduce(pg="4")) for r in range(2)},
    ),  # fmt: skip
    case(
        "chakra-groups-not-json",
        f"{RUN} {{tmp}}/t --comm-groups {{tmp}}/g.json",
        "g.json' is not valid JSON",
        files={"t.0.et": AR, "t.1.et": AR, "g.json": "{1: [0"},
    ),  # fmt: skip
    case(
        "chakra-rank-map-unknown-xpu",
        f"{RUN} {{tmp}}/t --rank-map {{tmp}}/m.json",
        "'gpu9', which is not an XPU",
        files={"t.0.et": AR, "t.1.et": AR, "m.json": '{"0": "xpu0", "1": "gpu9"}'},
    ),  # fmt: skip
    case(
        "chakra-rank-map-missing",
        f"{RUN} {{tmp}}/t --rank-map {{tmp}}/none.json",
        "none.json' does not exist",
        files={"t.0.et": AR, "t.1.et": AR},
    ),  # fmt: skip
    case(
        "aicb-bad-comm-type",
        f"{RUN} {{tmp}}/w.txt",
        "comm type 'ALLSHUFFLE' is not supported",
        files={"w.txt": AICB_OK_HEADER + "1\n" + LAYER.replace("NONE", "ALLSHUFFLE")},
    ),  # fmt: skip
    case(
        "aicb-count-mismatch",
        f"{RUN} {{tmp}}/w.txt",
        "announces 3 layers but 1",
        files={"w.txt": AICB_OK_HEADER + "3\n" + LAYER},
    ),  # fmt: skip
    case(
        "aicb-short-line",
        f"{RUN} {{tmp}}/w.txt",
        "line 3: 11 fields",
        files={"w.txt": AICB_OK_HEADER + "1\n" + LAYER.rsplit("\t", 1)[0] + "\n"},
    ),  # fmt: skip
    case(
        "aicb-too-many-gpus",
        f"{RUN} {{tmp}}/w.txt",
        "8 ranks but the platform has 4 XPUs",
        files={"w.txt": AICB_OK_HEADER.replace("all_gpus: 4", "all_gpus: 8") + "1\n" + LAYER},
    ),  # fmt: skip
    case("import-missing-file", "platform import {tmp}/nope.yml -o {tmp}/p.xml", "nope.yml' does not exist"),
    case(
        "import-unknown-format",
        "platform import {tmp}/x.yml -o {tmp}/p.xml",
        "neither an ASTRA-sim network",
        files={"x.yml": "hosts: [a, b]\n"},
    ),  # fmt: skip
    case(
        "import-astra-unknown-block",
        "platform import {tmp}/n.yml -o {tmp}/p.xml",
        "'Torus'.*unknown",
        files={"n.yml": HGX.replace("Switch", "Torus")},
    ),  # fmt: skip
    case(
        "import-astra-lengths-differ",
        "platform import {tmp}/n.yml -o {tmp}/p.xml",
        "bandwidth has 2 entries",
        files={"n.yml": HGX.replace("[ 400.0 ]", "[ 400.0, 100.0 ]")},
    ),  # fmt: skip
    case(
        "import-astra-with-link-defaults",
        "platform import {tmp}/n.yml -o {tmp}/p.xml --link-bandwidth 1GBps",
        "apply to InfraGraph files",
        files={"n.yml": HGX},
    ),  # fmt: skip
    case(
        "import-infragraph-no-bandwidth",
        "platform import {tmp}/ig.yml -o {tmp}/p.xml",
        "link 'wire'.*no bandwidth",
        files={"ig.yml": IG_NO_BW},
    ),  # fmt: skip
    case(
        "import-infragraph-transfers",
        "platform import {tmp}/ig.yml -o {tmp}/p.xml --link-latency 1us",
        "transfers per second",
        files={"ig.yml": IG_NO_BW.replace("{name: wire}", GTS_LINK)},
    ),  # fmt: skip
    case(
        "import-infragraph-unknown-device",
        "platform import {tmp}/ig.yml -o {tmp}/p.xml --link-bandwidth 1GBps --link-latency 1us",
        "InfraGraph file .* is invalid",
        files={"ig.yml": IG_NO_BW.replace("device: box", "device: crate")},
    ),  # fmt: skip
]
