"""Flags that take rates with units, and renamed flags."""

from bad_inputs import case

CASES = [
    case("serve-rate-unknown-unit", "serve --gpu v100 --rate 6000/day", "--rate.*/s, /min or /h"),
    case("serve-rate-not-a-number", "serve --gpu v100 --rate fast", "--rate.*'6000/s'"),
    case("serve-rate-zero-with-unit", "serve --gpu v100 --rate 0/s --requests 1000", "rate 0.0 is invalid"),
    case("queues-rate-unknown-unit", "queues --arrival poisson --rate 1/week", "--rate.*/min"),
    case("sweep-workers-not-a-count", "sweep {tmp}/s.yaml --workers two", "--workers"),
]
