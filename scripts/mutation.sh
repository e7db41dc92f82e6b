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
PYTEST="$PYTHON -m pytest -x -q -p no:cacheprovider -p no:randomly --no-header -o addopts="

declare -A TESTS=(
  [hcsim/collectives/plans.py]="tests/engine/test_ring_plan.py"
  [hcsim/platform/compiler.py]="tests/platform/test_routing.py tests/platform/test_topology.py"
  [hcsim/platform/routing.py]="tests/platform/test_routing.py tests/platform/test_topology.py"
  [hcsim/fast/ring_steps.py]="tests/engine/test_ring_plan.py tests/fast/test_memoize_collectives.py"
  [hcsim/workload/parallel/schedules.py]="tests/workload/test_parallel.py"
  [hcsim/analysis/queueing.py]="tests/analysis/test_queueing.py"
)
ORDER=(hcsim/collectives/plans.py hcsim/platform/compiler.py hcsim/platform/routing.py
       hcsim/fast/ring_steps.py hcsim/workload/parallel/schedules.py hcsim/analysis/queueing.py)
[ $# -gt 0 ] && ORDER=("$@")

for module in "${ORDER[@]}"; do
  tests=${TESTS[$module]:?"no tests listed for $module (valid: ${!TESTS[*]})"}
  name=$(basename "$module" .py)
  copy="$WORK/$name"
  rm -rf "$copy" && mkdir -p "$copy"
  (cd "$ROOT" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$copy" 2>/dev/null || true)
  existing=""
  for t in $tests; do [ -f "$copy/$t" ] && existing="$existing $t"; done
  echo "== $module: tests$existing (budget ${BUDGET}s)"
  (
    cd "$copy"
    export PYTHONPATH="$copy"
    start=$(date +%s)
    timeout "$BUDGET" "$MUTMUT" run --paths-to-mutate "$module" --tests-dir tests \
      --runner "$PYTEST$existing" --no-progress >"$WORK/$name.log" 2>&1 || true
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
