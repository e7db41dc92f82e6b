"""``hcsim platform build|compile|check|draw`` misuse: sizes, link parameters and paths."""

from bad_inputs import case
from bad_inputs.formats import graphml

CASES = [
    case(
        "build-xpus-billion", "platform build cxl --xpus 1000000000 -o {tmp}/p.xml", r"--xpus.*at most 4096", timeout=20
    ),
    case(
        "build-ring-xpus-huge", "platform build ring --xpus 100000 -o {tmp}/p.xml", r"--xpus.*ring.*at most", timeout=20
    ),
    case(
        "build-star-xpus-huge", "platform build star --xpus 100000 -o {tmp}/p.xml", r"--xpus.*star.*at most", timeout=20
    ),
    case(
        "build-leafspine-xpus-huge",
        "platform build leafspine --xpus 1000000000 -o {tmp}/p.xml",
        r"--xpus.*leafspine.*at most",
        timeout=20,
    ),
    case(
        "build-leafspine-spines-huge",
        "platform build leafspine --xpus 32 --spines 100000000 -o {tmp}/p.xml",
        r"--spines",
    ),
    case(
        "build-leafspine-hosts-per-leaf-zero",
        "platform build leafspine --xpus 32 --hosts-per-leaf 0 -o {tmp}/p.xml",
        r"--hosts-per-leaf",
    ),
    case("build-xpus-zero", "platform build cxl --xpus 0 -o {tmp}/p.xml", r"--xpus 0.*multiple"),
    case("build-xpus-negative", "platform build ring --xpus -4 -o {tmp}/p.xml", r"--xpus -4"),
    case(
        "build-xpus-not-multiple", "platform build noncoherent --xpus 12 -o {tmp}/p.xml", r"--xpus 12.*multiple of.*8"
    ),
    case("build-xpus-missing", "platform build cxl -o {tmp}/p.xml", r"--xpus is required"),
    case("build-xpus-not-integer", "platform build cxl --xpus many -o {tmp}/p.xml", r"--xpus.*invalid int"),
    case("build-server-xpus", "platform build server --xpus 16 -o {tmp}/p.xml", r"--xpus 16.*valid: 8"),
    case(
        "build-cxl-latency-1e300",
        "platform build cxl --xpus 16 --cxl-latency 1e300s -o {tmp}/p.xml",
        r"CXL link: latency.*at most",
    ),
    case(
        "build-cxl-latency-negative",
        "platform build cxl --xpus 16 --cxl-latency=-1us -o {tmp}/p.xml",
        r"CXL link: latency.*>= 0",
    ),
    case("build-cxl-latency-unit", "platform build cxl --xpus 16 --cxl-latency 5parsecs -o {tmp}/p.xml", r"time unit"),
    case(
        "build-cxl-bandwidth-denormal",
        "platform build cxl --xpus 16 --cxl-bandwidth 1e-320Bps -o {tmp}/p.xml",
        r"CXL link: bandwidth.*>= 1 B/s",
    ),
    case(
        "build-cxl-bandwidth-nan", "platform build cxl --xpus 16 --cxl-bandwidth nanGBps -o {tmp}/p.xml", r"bandwidth"
    ),
    case(
        "build-cxl-bandwidth-zero",
        "platform build cxl --xpus 16 --cxl-bandwidth 0GBps -o {tmp}/p.xml",
        r"CXL link: bandwidth",
    ),
    case(
        "build-cxl-flags-on-ring",
        "platform build ring --xpus 4 --cxl-latency 1us -o {tmp}/p.xml",
        r"apply to 'cxl' only",
    ),
    case(
        "build-link-bandwidth-tiny",
        "platform build ring --xpus 4 --link-bandwidth 1e-300Bps -o {tmp}/p.xml",
        r"bandwidth.*>= 1 B/s",
    ),
    case(
        "build-link-latency-huge",
        "platform build star --xpus 4 --link-latency 1e300s -o {tmp}/p.xml",
        r"latency.*at most",
    ),
    case("build-mix-unknown", "platform build cxl --xpus 16 --mix B200 -o {tmp}/p.xml", r"'B200' is unknown.*H100"),
    case("build-mix-empty-part", "platform build cxl --xpus 16 --mix H100+ -o {tmp}/p.xml", r"mix 'H100\+' is invalid"),
    case("build-precision-unknown", "platform build cxl --xpus 16 --precision fp8 -o {tmp}/p.xml", r"--precision.*fp8"),
    case("build-output-directory", "platform build ring --xpus 4 -o {tmp}", r"is a directory"),
    # a missing directory is created (docs/cli.md, Outputs); a file in the way is refused
    case(
        "build-output-under-a-file",
        "platform build ring --xpus 4 -o {tmp}/no/such/p.xml",
        r"no' is not a directory",
        files={"no": "x"},
    ),
    case("build-output-under-sys", "platform build ring --xpus 4 -o /sys/hcsim.xml", r"/sys/hcsim.xml"),
    case(
        "build-graphml-under-proc",
        "platform build ring --xpus 4 -o {tmp}/p.xml --save-graphml /proc/t.graphml",
        r"/proc/t.graphml",
    ),
    case(
        "build-graphml-directory", "platform build ring --xpus 4 -o {tmp}/p.xml --save-graphml {tmp}", r"is a directory"
    ),
    case(
        "compile-output-under-proc",
        "platform compile {tmp}/t.graphml -o /proc/hcsim.xml",
        r"/proc/hcsim.xml",
        files={"t.graphml": graphml()},
    ),
    case(
        "compile-output-directory",
        "platform compile {tmp}/t.graphml -o {tmp}",
        r"is a directory",
        files={"t.graphml": graphml()},
    ),
    case(
        "draw-xpus-billion", "platform draw cxl --xpus 1000000000 -o {tmp}/p.png", r"--xpus.*at most 4096", timeout=20
    ),
    case("draw-nothing", "platform draw -o {tmp}/p.png", r"nothing to draw"),
    case(
        "draw-system-and-graphml",
        "platform draw ring --xpus 4 --graphml {tmp}/t.graphml -o {tmp}/p.png",
        r"not both",
        files={"t.graphml": graphml()},
    ),
    case("draw-output-directory", "platform draw ring --xpus 4 -o {tmp}", r"is a directory"),
    case("draw-output-under-sys", "platform draw ring --xpus 4 -o /sys/hcsim.png", r"/sys/hcsim.png"),
    case(
        "draw-output-under-a-file",
        "platform draw ring --xpus 4 -o {tmp}/none/p.png",
        r"none' is not a directory",
        files={"none": "x"},
    ),
]
