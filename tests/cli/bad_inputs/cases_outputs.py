"""Outputs that must not be written (issue 25, item 1; docs/cli.md, Outputs): refused before any work, in one line."""

from bad_inputs import case

_RUN = "run --system cxl --xpus 8 --workload allreduce --bytes 1MiB --iterations 1"
_SPEC = "function: hcsim.sweep.experiments:allreduce\nfixed: {system: cxl, xpus: 8}\n"

CASES = [
    case("out-empty-o", "platform build cxl --xpus 8 -o ''", r"-o/--output is empty"),
    case("out-empty-save-graphml", "platform build cxl --xpus 8 -o {tmp}/p.xml --save-graphml ''",
         "--save-graphml is empty"),
    case("out-empty-csv", _RUN + " --csv ''", "--csv is empty"),
    case("out-empty-collective", "collective --system cxl --xpus 8 --out ''", "--out is empty"),
    case("out-empty-serve", "serve --gpu v100 --rho 0.5 --out ''", "--out is empty"),
    case("out-empty-queue-selection", "queue-selection --out ''", "--out is empty"),
    case("out-empty-demo", "demo --out ''", "--out is empty"),
    case("out-empty-sweep", "sweep {tmp}/s.yaml --out ''", "--out is empty", files={"s.yaml": _SPEC}),
    case("out-csv-is-a-directory", _RUN + " --csv {tmp}/d", r"--csv .*is a directory", files={"d/keep": "x"}),
    case("out-draw-is-a-directory", "platform draw cxl --xpus 8 -o {tmp}/d", "is a directory", files={"d/keep": "x"}),
    case("out-collective-is-a-file", "collective --system cxl --xpus 8 --out {tmp}/f",
         r"--out .*is a file, not a directory", files={"f": "mine"}),
    case("out-csv-and-links-same", _RUN + " --csv {tmp}/a.csv --links {tmp}/./a.csv",
         "--links .*same file as the output --csv"),
    case("out-build-and-graphml-same", "platform build cxl --xpus 8 -o {tmp}/a --save-graphml {tmp}/a", "same file"),
    case("out-csv-on-platform", "run --platform {tmp}/p.xml --workload allreduce --iterations 1 --csv {tmp}/p.xml",
         "--csv .*same file as the input --platform", files={"p.xml": "<platform/>"}),
    case("out-compile-on-its-graphml", "platform compile {tmp}/t.graphml -o {tmp}/t.graphml", "same file as the input",
         files={"t.graphml": "<graphml/>"}),
    case("out-sweep-on-its-spec", "sweep {tmp}/s.yaml --out {tmp}/s.yaml", "same file as the input spec",
         files={"s.yaml": _SPEC}),
    case("out-under-a-file", _RUN + " --csv {tmp}/f/x.csv", "is not a directory", files={"f": "x"}),
    # devices (/dev/null) are tested in test_cli_outputs.py only, in-process behind a guard: a regression must
    # fail a test, not replace the machine's /dev/null
    case("sweep-duplicate-key", "sweep {tmp}/s.yaml", r"duplicate key 'fixed' at line 3",
         files={"s.yaml": _SPEC + "fixed: {system: noncoherent}\n"}),
]  # fmt: skip
