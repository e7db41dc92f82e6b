"""``hcsim demo``: sizes it cannot show and output directories it cannot use; nothing left behind."""

from bad_inputs import case

CASES = [
    case("demo-xpus-8", "demo --xpus 8 --out {tmp}/demo", r"--xpus 8.*16, 24"),
    case("demo-xpus-12", "demo --xpus 12 --out {tmp}/demo", r"--xpus 12.*multiple of 8"),
    case("demo-xpus-zero", "demo --xpus 0 --out {tmp}/demo", r"--xpus 0"),
    case("demo-xpus-billion", "demo --xpus 1000000000 --out {tmp}/demo", r"--xpus 1000000000.*at most", timeout=20),
    case("demo-out-is-file", "demo --out {tmp}/f", r"'.*f'.*not a directory", files={"f": "x"}),
    case("demo-out-under-proc", "demo --out /proc/hcsim-demo", r"/proc/hcsim-demo"),
    case("demo-out-under-sys", "demo --out /sys/hcsim-demo", r"/sys/hcsim-demo"),
]
