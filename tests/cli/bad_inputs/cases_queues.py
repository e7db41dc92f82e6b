"""``hcsim queue-selection`` (alias ``queues``): run sizes and parameters, refused before anything is drawn."""

from bad_inputs import case

CASES = [
    case("queues-period-1e12", "queues --period 1e12 --replications 1", r"--period 1e\+12 min.*at most 10,000,000"),
    case("queues-period-inf", "queues --period inf", r"--period inf.*minutes > 0"),
    case("queues-period-negative", "queues --period -5", r"--period -5.*> 0"),
    case("queues-period-unit", "queues --period 3fortnights", r"--period.*unknown time unit"),
    case("queues-replications-1e9", "queues --replications 1000000000", r"--replications 1000000000.*100,000"),
    case("queues-replications-zero", "queues --replications 0", r"--replications 0.*>= 1"),
    case(
        "queues-replications-times-period",
        "queues --replications 100000 --period 100000",
        r"--replications 100000 x --period 100000 min.*at most 10,000,000",
    ),
    case("queues-poisson-rate-1e9", "queues --arrival poisson --rate 1e9 --replications 1", r"--rate 1e\+09.*--period"),
    case("queues-poisson-no-rate", "queues --arrival poisson --replications 1", r"--rate"),
    case("queues-seed-negative", "queues --seed -1 --replications 1", r"--seed -1.*from 0"),
    case("queues-workers-1e5", "queues --workers 100000 --replications 1", r"--workers 100000.*at most 256"),
    case("queues-set-unknown", "queues --set 9z", r"set '9z'.*1a\.\.3d"),
    case("queues-offset-zero", "queues --method offset --offset 0", r"--offset 0.*minutes > 0"),
    case("queue-selection-method-unknown", "queue-selection --method fastest", r"method 'fastest'.*random, mql"),
    case("queues-fifo-servers-zero", "queues --model fifo --servers 0 --replications 1", r"--servers 0"),
    case("queues-out-is-file", "queues --replications 1 --out {tmp}/f", r"--out .*is a file", files={"f": "x"}),
]
