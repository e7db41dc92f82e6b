"""``hcsim run`` misuse: sizes, iteration counts, platforms and output paths."""

from bad_inputs import case

RING = "run --system ring --xpus 4 --workload allreduce --bytes 1MB"

CASES = [
    case("run-iterations-billion", f"{RING} --iterations 1000000000", r"--iterations 1000000000.*at most", timeout=20),
    case("run-iterations-zero", f"{RING} --iterations 0", r"--iterations 0.*>= 1"),
    case("run-iterations-missing", "run --system ring --xpus 4 --workload allreduce", r"--iterations"),
    case(
        "run-bytes-100EB",
        "run --system ring --xpus 4 --workload allreduce --bytes 100EB --iterations 1",
        r"--bytes.*at most",
    ),
    case(
        "run-bytes-2-64",
        "run --system ring --xpus 4 --workload allreduce --bytes 18446744073709551616 --iterations 1",
        r"--bytes.*at most",
    ),
    case(
        "run-bytes-negative",
        "run --system ring --xpus 4 --workload allreduce --bytes=-1MB --iterations 1",
        r"--bytes.*>= 0",
    ),
    case("run-bytes-nan", "run --system ring --xpus 4 --workload allreduce --bytes nan --iterations 1", r"--bytes"),
    case(
        "run-bytes-unit",
        "run --system ring --xpus 4 --workload allreduce --bytes 1MiBs --iterations 1",
        r"--bytes.*unknown unit",
    ),
    case(
        "run-xpus-billion",
        "run --system cxl --xpus 1000000000 --workload allreduce --iterations 1",
        r"--xpus.*at most 4096",
        timeout=20,
    ),
    case(
        "run-cxl-latency-1e300",
        "run --system cxl --xpus 16 --cxl-latency 1e300s --workload allreduce --iterations 1",
        r"CXL link: latency.*at most",
    ),
    case(
        "run-cxl-bandwidth-denormal",
        "run --system cxl --xpus 16 --cxl-bandwidth 1e-320Bps --workload allreduce --iterations 1",
        r"CXL link: bandwidth",
    ),
    case("run-no-platform", "run --workload allreduce --iterations 1", r"platform is required"),
    case(
        "run-platform-and-system",
        "run --platform {tmp}/p.xml --system cxl --xpus 16 --workload allreduce --iterations 1",
        r"not both",
    ),
    case(
        "run-platform-missing",
        "run --platform {tmp}/p.xml --workload allreduce --iterations 1",
        r"p\.xml' does not exist",
    ),
    case("run-workload-unknown", f"{RING} --workload bert --iterations 1", r"workload 'bert' is unknown.*allreduce"),
    case(
        "run-fast-not-data-parallel",
        "run --system cxl --xpus 16 --workload fig3 --fast --iterations 1",
        r"--fast.*data-parallel",
    ),
    case(
        "run-server-xpus", "run --system server --xpus 16 --workload allreduce --iterations 1", r"--xpus 16.*valid: 8"
    ),
    case("run-trace-directory", f"{RING} --iterations 1 --chrome-trace {{tmp}}", r"is a directory"),
    case(
        "run-csv-under-a-file",
        f"{RING} --iterations 1 --csv {{tmp}}/none/t.csv",
        r"none' is not a directory",
        files={"none": "x"},
    ),
    case("run-links-under-sys", f"{RING} --iterations 1 --links /sys/links.csv", r"/sys/links.csv"),
    case("run-trace-under-proc", f"{RING} --iterations 1 --chrome-trace /proc/trace.json", r"/proc/trace.json"),
]
