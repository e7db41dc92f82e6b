#!/usr/bin/env bash
# Mutation testing of hcsim's core modules with mutmut 2.x (not part of CI; docs/testing.md has the results).
#
#   scripts/mutation.sh [MODULE...]        # default: every module below; one mutmut run each
#
# mutmut 2 writes each mutant into the source file itself, so every module runs in a fresh copy of the
# working tree (under $WORK, default a temporary folder): the tree you work in is never mutated. Each
# mutant runs only the test files that exercise its module (the TESTS table), and each module's run is
# time-boxed ($BUDGET seconds, default 3600). Results: $WORK/<module>.txt (mutmut results and the diff
# of every survivor).
#
# Needs mutmut 2.x where hcsim's own interpreter finds it, e.g.
#   python -m venv --system-site-packages /tmp/mutvenv && /tmp/mutvenv/bin/pip install "mutmut<3"
#   MUTMUT=/tmp/mutvenv/bin/mutmut PYTHON=.venv/bin/python scripts/mutation.sh
# (mutmut 3.x mutates a copy under mutants/ and failed at its baseline on this tree: docs/testing.md.)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python}
MUTMUT=${MUTMUT:-mutmut}
BUDGET=${BUDGET:-3600}
WORK=${WORK:-$(mktemp -d -t hcsim-mutation-XXXXXX)}
# string literals (messages, docstrings, __all__) and decorators are not mutated: their mutants change
# no number hcsim computes; override with SKIP=""
SKIP=${SKIP-string,fstring,decorator}
PYTEST="$PYTHON -m pytest -x -q -p no:cacheprovider -p no:randomly --no-header -o addopts="

declare -A TESTS=(
  [hcsim/collectives/plans.py]="tests/collectives/test_plans.py tests/engine/test_ring_plan.py"
  [hcsim/platform/compiler.py]="tests/platform/test_compiler_routes.py tests/platform/test_routing.py"
  [hcsim/platform/routing.py]="tests/platform/test_compiler_routes.py tests/platform/test_routing.py"
  [hcsim/fast/ring_steps.py]="tests/engine/test_ring_plan.py"
  [hcsim/fast/shared_steps.py]="tests/fast/test_shared_steps.py"
  [hcsim/workload/parallel/schedules.py]="tests/workload/test_parallel.py tests/workload/test_training_features.py"
  [hcsim/analysis/queueing.py]="tests/analysis/test_queueing.py"
)
# the lines mutated in each module (its core: the closed forms, plan builders, route writers, ring steps);
# a module run within its budget on these lines rather than part-way through the whole file
declare -A LINES=(
  [hcsim/collectives/plans.py]="46-113"
  [hcsim/platform/compiler.py]="236-310"
  [hcsim/platform/routing.py]="48-54 98-223"
  [hcsim/fast/ring_steps.py]="184-196 386-545"
  [hcsim/fast/shared_steps.py]="49-81"
  [hcsim/workload/parallel/schedules.py]="33-116"
  [hcsim/analysis/queueing.py]="64-145"
)
# tests a mutant runs: the fast ones of each module's test files (-k), so one mutant takes seconds
declare -A SELECT=(
  [hcsim/analysis/queueing.py]="not independent_simulation and not 0.95"
  [hcsim/platform/routing.py]="not generated_topologies and not zoned_routes_equal"
  [hcsim/fast/shared_steps.py]="measured_before"
)
ORDER=(hcsim/collectives/plans.py hcsim/platform/compiler.py hcsim/platform/routing.py
       hcsim/fast/ring_steps.py hcsim/fast/shared_steps.py hcsim/workload/parallel/schedules.py
       hcsim/analysis/queueing.py)
[ $# -gt 0 ] && ORDER=("$@")

for module in "${ORDER[@]}"; do
  tests=${TESTS[$module]:?"no tests listed for $module (valid: ${!TESTS[*]})"}
  name=$(basename "$module" .py)
  copy="$WORK/$name"
  rm -rf "$copy" && mkdir -p "$copy"
  (cd "$ROOT" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$copy" 2>/dev/null || true)
  existing=""
  for t in $tests; do [ -f "$copy/$t" ] && existing="$existing $t"; done
  lines=${LINES[$module]:-}
  patch_args=()
  if [ -n "$lines" ]; then  # a patch that shows those lines as added: mutmut --use-patch-file mutates only them
    "$PYTHON" - "$copy" "$module" $lines >"$WORK/$name.patch" <<'PY'
import difflib, sys
root, module, *ranges = sys.argv[1:]
new = open(f"{root}/{module}").read().splitlines(keepends=True)
keep = set()
for r in ranges:
    a, b = map(int, r.split("-"))
    keep.update(range(a, b + 1))
old = [line for i, line in enumerate(new, 1) if i not in keep]
sys.stdout.writelines(difflib.unified_diff(old, new, f"a/{module}", f"b/{module}"))
PY
    patch_args=(--use-patch-file "$WORK/$name.patch")
  fi
  select=${SELECT[$module]:-}
  # mutmut 2 counts only exit status 1 as a failure: a mutant that breaks the tests' import (pytest exits 2)
  # would pass for a survivor, so the runner turns every failure into 1
  printf '%s\n' "cd '$copy' && PYTHONPATH='$copy' $PYTEST$existing ${select:+-k '$select'} || exit 1" >"$WORK/$name.run.sh"
  runner="bash $WORK/$name.run.sh"
  echo "== $module: lines ${lines:-all}; tests$existing${select:+ -k '$select'} (budget ${BUDGET}s)"
  (
    cd "$copy"
    export PYTHONPATH="$copy"
    start=$(date +%s)
    timeout "$BUDGET" "$MUTMUT" run --paths-to-mutate "$module" --tests-dir tests \
      --runner "$runner" --no-progress ${SKIP:+--disable-mutation-types "$SKIP"} "${patch_args[@]}" \
      >"$WORK/$name.log" 2>&1 || true
    echo "   $(( $(date +%s) - start )) s"
    "$MUTMUT" results >"$WORK/$name.txt" 2>&1 || true
    for id in $("$MUTMUT" result-ids survived 2>/dev/null); do
      echo "--- survivor $id" >>"$WORK/$name.txt"
      "$MUTMUT" show "$id" >>"$WORK/$name.txt" 2>&1 || true
    done
  )
  grep -E "^(Survived|Killed|Timeout|Suspicious|Untested)|To apply" "$WORK/$name.txt" | head -5 || true
done
echo "results in $WORK"
