#!/usr/bin/env bash
# Set up everything hcsim needs on a fresh Debian 12 / Python 3.11 machine (as root),
# then run one job:
#
#   bash scripts/bootstrap.sh demo    # set up, then run the main demo
#   bash scripts/bootstrap.sh test    # set up, then run the whole test suite
#   bash scripts/bootstrap.sh setup   # set up only
#
# Idempotent: a second run reuses .venv and does not rebuild SimGrid.
# What it absorbs (see DEVELOPERS.md):
#   * simgrid==4.1 builds from source: it needs libboost-dev, cmake and g++;
#   * the build fails with pybind11 3.x: pybind11<3 is imposed on the build through
#     both PIP_CONSTRAINT (older pip) and PIP_BUILD_CONSTRAINT (pip >= 26.2, which no
#     longer passes PIP_CONSTRAINT into build environments);
#   * the extension finds no libsimgrid.so.4.1 (no rpath): a .pth hook in the venv
#     preloads it by absolute path, so `import simgrid` just works.
set -euo pipefail

job="${1:-setup}"
shift || true
case "$job" in setup|demo|test) ;; *)
  echo "bootstrap: unknown job '$job' (valid: setup, demo, test)" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv"
say() { printf '[bootstrap] %s\n' "$*"; }

# ---- OS packages --------------------------------------------------------------
need=()
for pkg in libboost-dev cmake g++ make python3-venv python3-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "bootstrap: missing OS packages ${need[*]}: run as root or install them first" >&2; exit 2
  fi
  say "installing OS packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

# ---- Python environment -------------------------------------------------------
python="${PYTHON:-}"
if [ -z "$python" ]; then
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      python="$cand"; break
    fi
  done
fi
[ -n "$python" ] || { echo "bootstrap: Python >= 3.11 not found" >&2; exit 2; }
if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv with $($python --version)"
  "$python" -m venv "$venv"
fi
py="$venv/bin/python"

# ---- packages (SimGrid is built once; later runs find it installed) -------------
export PIP_CONSTRAINT="$root/scripts/build-constraints.txt"
export PIP_BUILD_CONSTRAINT="$root/scripts/build-constraints.txt"
export PIP_DISABLE_PIP_VERSION_CHECK=1
stamp="$venv/.hcsim-installed"
want="$(sha256sum pyproject.toml scripts/build-constraints.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$py" -c 'import hcsim' 2>/dev/null; then
  if ! "$py" -m pip show simgrid >/dev/null 2>&1; then
    say "building SimGrid 4.1 from source (about 7 minutes on 2 cores; only this once)"
  fi
  "$py" -m pip install -q -e ".[test]"
  echo "$want" > "$stamp"
fi

# ---- make `import simgrid` find libsimgrid without LD_LIBRARY_PATH ---------------
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
hook="$site/hcsim_simgrid_preload.pth"
# after the preload, forget the hcsim modules it imported: a later `import hcsim` then follows
# sys.path (a checkout in the working directory, e.g. a git worktree sharing this venv, runs its own code)
line='import hcsim._preload, sys; [sys.modules.pop(m) for m in [n for n in sys.modules if n.split(".")[0] == "hcsim"]]'
if [ ! -f "$hook" ] || [ "$(cat "$hook")" != "$line" ]; then
  printf '%s\n' "$line" > "$hook"
fi
"$py" -c 'import simgrid, hcsim; print("[bootstrap] SimGrid", simgrid.simgrid_version, "and hcsim", hcsim.__version__, "ready")'

# ---- the job --------------------------------------------------------------------
case "$job" in
  setup) ;;
  demo) exec "$venv/bin/hcsim" demo "$@" ;;
  test) exec "$py" -m pytest -n "${HCSIM_TEST_WORKERS:-auto}" "$@" ;;
esac
