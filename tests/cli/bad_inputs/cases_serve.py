"""``hcsim serve`` (alias ``queue``): dynamic-batching parameters, refused before anything is simulated."""

from bad_inputs import case

LINEAR = "serve --alpha 2ms --tau0 5ms --rho 0.5 --requests 100"

CASES = [
    case("serve-alpha-zero", "serve --alpha 0 --tau0 5ms --rho 0.5", r"--alpha '0'.*--alpha > 0"),
    case("serve-alpha-inf", "serve --alpha inf --tau0 5ms --rho 0.5", r"--alpha 'inf'.*finite"),
    case("serve-tau0-negative", "serve --alpha 2ms --tau0=-1ms --rho 0.5", r"--tau0 '-1ms'.*--tau0 >= 0"),
    case(
        "serve-jobs-1e10",
        "serve --gpu v100 --rho 0.5 --requests 10000000000",
        r"--requests 10000000000.*1 to 100,000,000",
    ),
    case("serve-jobs-zero", "serve --gpu v100 --rho 0.5 --requests 0", r"--requests 0.*from 1"),
    case(
        "serve-servers-1e9",
        "serve --gpu v100 --rho 0.5 --servers 1000000000",
        r"--servers 1000000000.*4,096",
        timeout=30,
    ),
    case("serve-servers-zero", "serve --gpu v100 --rho 0.5 --servers 0", r"--servers 0.*from 1"),
    case("serve-max-batch-zero", "serve --gpu v100 --rho 0.5 --max-batch 0", r"--max-batch 0.*from 1"),
    case("serve-max-batch-too-small", f"{LINEAR} --max-batch 1", r"--max-batch 1 is too small.*M / \(alpha M"),
    case("serve-beta-nan", f"{LINEAR} --beta nan", r"--beta nan.*finite number >= 0"),
    case("serve-beta-negative", f"{LINEAR} --beta -1", r"--beta -1\.0.*>= 0"),
    case("serve-c0-inf", f"{LINEAR} --beta 0.1 --c0 inf", r"--c0 inf.*finite"),
    case("serve-beta-with-gpu", "serve --gpu v100 --rho 0.5 --beta 0.1", r"--beta applies with --alpha only"),
    case("serve-seed-negative", "serve --gpu v100 --rho 0.5 --seed -1", r"--seed -1.*from 0"),
    case("serve-rate-nan", "serve --gpu v100 --rate nan", r"--rate: cannot parse 'nan'"),
    case("serve-rate-negative", "serve --gpu v100 --rate -5", r"--rate -5\.0.*> 0"),
    case("serve-rho-unstable", "serve --gpu v100 --rho 1.5", r"unstable.*rho = lambda alpha < 1"),
    case("serve-max-delay-inf", f"{LINEAR} --max-delay inf", r"--max-delay 'inf'.*finite duration"),
    case("serve-max-delay-unit", f"{LINEAR} --max-delay 5parsecs", r"--max-delay.*unknown time unit"),
    case("serve-out-is-file", "serve --gpu v100 --rho 0.5 --out {tmp}/f", r"--out .*is a file", files={"f": "x"}),
    case("queue-alias-seed-negative", "queue --gpu p4 --rho 0.5 --seed -7", r"--seed -7"),
]
