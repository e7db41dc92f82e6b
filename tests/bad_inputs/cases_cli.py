"""Command-line misuse shared by every command."""

from bad_inputs import case

CASES = [
    case("cli-unknown-command", "frobnicate", "invalid choice"),
    case("run-workload-missing", "run --workload {tmp}/nope.json --iterations 1 --system cxl --xpus 16", "nope.json"),
    case("platform-build-out-under-proc", "platform build cxl --xpus 16 -o /proc/hcsim.xml", "/proc/hcsim.xml"),
]
