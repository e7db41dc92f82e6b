"""Command-line misuse shared by every command."""

from bad_inputs import case

CASES = [
    case("cli-unknown-command", "frobnicate", "invalid choice"),
    case("cli-no-command", "", r"required"),
    case("cli-unknown-option", "platform check --frobnicate x.xml", r"unrecognized arguments"),
    case("cli-platform-no-action", "platform", r"required"),
    case("run-workload-missing", "run --workload {tmp}/nope.json --iterations 1 --system cxl --xpus 16", "nope.json"),
    case("platform-build-out-under-proc", "platform build cxl --xpus 16 -o /proc/hcsim.xml", "/proc/hcsim.xml"),
    case(
        "run-algorithm-unknown",
        "run --system cxl --xpus 16 --workload allreduce --algorithm nope --iterations 1",
        "nope",
    ),
    case(
        "run-algorithm-on-fig3",
        "run --system cxl --xpus 16 --workload fig3 --algorithm ring --iterations 1",
        "--algorithm applies to the llama2-13b and allreduce workloads",
    ),
]
