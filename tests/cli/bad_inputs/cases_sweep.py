"""``hcsim sweep`` specs: YAML bombs, unknown keys, bad encodings, timeouts, functions, sizes and outputs."""

from bad_inputs import case

FN = "function: hcsim.sweep.experiments:collective\n"
GRID = "grid: {xpus: [16]}\n"
OUT = "out: r.jsonl\n"
RUN = "sweep {tmp}/s.yaml"


def spec(text: str) -> dict[str, str | bytes]:
    """The spec file ``s.yaml``."""
    return {"s.yaml": text}


def _bomb(levels: int = 9) -> str:
    """A "billion laughs" spec: each anchor lists the previous one 9 times (9**levels values once expanded)."""
    lines = [
        FN.strip(),
        "grid:",
        "  nbytes:",
        '    - &a0 ["1KiB","1KiB","1KiB","1KiB","1KiB","1KiB","1KiB","1KiB","1KiB"]',
    ]
    lines += [f"    - &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n" + OUT


def _grid(parameters: int, values: int) -> str:
    """A grid of ``values ** parameters`` points."""
    rows = "".join(f"  p{i}: [{', '.join(map(str, range(values)))}]\n" for i in range(parameters))
    return FN + "grid:\n" + rows + OUT


CASES = [
    case(
        "sweep-yaml-billion-laughs",
        RUN,
        r"more than 100,000 values once its YAML aliases are expanded",
        files=spec(_bomb()),
    ),
    case(
        "sweep-yaml-recursive-alias",
        RUN,
        r"alias refers to a value that contains it",
        files=spec(FN + "grid: &g {x: [*g]}\n"),
    ),
    case(
        "sweep-unknown-key", RUN, r"unknown key 'gird'.*function, grid", files=spec(FN + "gird: {xpus: [16]}\n" + OUT)
    ),
    case("sweep-non-utf8", RUN, r"line 3: not UTF-8", files=spec((FN + GRID).encode() + b"# caf\xe9\n" + OUT.encode())),
    case("sweep-not-yaml", RUN, r"not valid YAML", files=spec(FN + "grid: {xpus: [16\n")),
    case("sweep-not-a-mapping", RUN, r"a sweep spec is a mapping", files=spec("- 1\n- 2\n")),
    case("sweep-timeout-nan", RUN, r"timeout nan.*seconds > 0", files=spec(FN + GRID + OUT + "timeout: .nan\n")),
    case("sweep-timeout-inf", RUN, r"timeout inf.*at most 1e\+07", files=spec(FN + GRID + OUT + "timeout: .inf\n")),
    case("sweep-timeout-negative", RUN, r"timeout -1.*seconds > 0", files=spec(FN + GRID + OUT + "timeout: -1\n")),
    case("sweep-timeout-string", RUN, r"timeout '10 min'", files=spec(FN + GRID + OUT + "timeout: 10 min\n")),
    case(
        "sweep-function-relative",
        RUN,
        r"'\.experiments:collective' names a relative module",
        files=spec("function: .experiments:collective\n" + GRID + OUT),
    ),
    case(
        "sweep-function-no-colon",
        RUN,
        r"'collective' is invalid.*module:function",
        files=spec("function: collective\n" + GRID + OUT),
    ),
    case(
        "sweep-function-missing",
        RUN,
        r"'hcsim\.sweep\.experiments:nope' cannot be imported",
        files=spec("function: hcsim.sweep.experiments:nope\n" + GRID + OUT),
    ),
    case(
        "sweep-parameter-unknown",
        RUN,
        r"parameter 'gpus' is not accepted.*xpus",
        files=spec(FN + "grid: {gpus: [16]}\n" + OUT),
    ),
    case(
        "sweep-grid-empty-list",
        RUN,
        r"grid parameter 'xpus' has no values",
        files=spec(FN + "grid: {xpus: []}\n" + OUT),
    ),
    case("sweep-grid-1e7-points", RUN, r"10,000,000 points.*at most 100,000", files=spec(_grid(7, 10))),
    case("sweep-jobs-1e7", f"{RUN} -j 10000000", r"-j/--workers 10000000.*1 to 256", files=spec(FN + GRID + OUT)),
    case("sweep-jobs-zero", f"{RUN} -j 0", r"-j/--workers 0", files=spec(FN + GRID + OUT)),
    case("sweep-out-under-proc", RUN, r"/proc/hcsim\.jsonl", files=spec(FN + GRID + "out: /proc/hcsim.jsonl\n")),
    # a missing directory is created (docs/cli.md, Outputs); one under a file cannot be
    case(
        "sweep-out-under-a-file",
        RUN,
        r"'f' is not a directory|f' is not a directory",
        files={**spec(FN + GRID + "out: f/r.jsonl\n"), "f": "x"},
    ),
    case("sweep-out-is-directory", f"{RUN} --out {{tmp}}", r"is a directory", files=spec(FN + GRID)),
    case("sweep-out-not-a-path", RUN, r"out 42 is invalid", files=spec(FN + GRID + "out: 42\n")),
    case("sweep-no-results-file", RUN, r"no results file.*--out", files=spec(FN + GRID)),
    case("sweep-spec-missing", "sweep {tmp}/none.yaml", r"none\.yaml' does not exist"),
    case("sweep-spec-is-directory", "sweep {tmp}", r"is a directory"),
]
