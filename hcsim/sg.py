"""SimGrid access: load the bindings, and give every simulation a process of its own.

Two facts shape this module.

* ``pip install simgrid==4.1`` builds from source and installs ``libsimgrid.so.4.1``
  beside the extension module, but the extension has no rpath to it, so a bare
  ``import simgrid`` fails. :func:`import_simgrid` loads the library by absolute path
  (``ctypes``, ``RTLD_GLOBAL``) first. ``scripts/bootstrap.sh`` also installs a ``.pth``
  hook doing the same, so ``import simgrid`` works in the project's environment too.
* SimGrid allows one Engine per process, never re-created. :func:`run_isolated` runs a
  function in a forked child that may create its engine, and returns the child's
  (picklable) result; an HcsimError raised in the child is re-raised in the parent.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import multiprocessing
import os
import site
import sys
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from hcsim.errors import HcsimError

__all__ = ["import_simgrid", "libsimgrid_path", "run_isolated", "new_engine"]

T = TypeVar("T")
_LOADED: list[str] = []


def libsimgrid_path() -> str:
    """Absolute path of the installed ``libsimgrid.so*`` (next to the ``simgrid`` extension)."""
    spec = importlib.util.find_spec("simgrid")
    if spec is None or spec.origin is None:
        raise HcsimError("SimGrid's Python bindings are not installed (run: bash scripts/bootstrap.sh test)")
    here = os.path.dirname(spec.origin)
    dirs = [here, os.path.join(here, "lib"), os.path.join(here, "simgrid"), os.path.join(sys.prefix, "lib")]
    dirs += [os.path.join(p, "lib") for p in site.getsitepackages()]
    for d in dirs:
        found = sorted(glob.glob(os.path.join(d, "libsimgrid.so*")))
        if found:
            return found[-1]
    raise HcsimError(f"libsimgrid.so not found near {spec.origin} (reinstall: bash scripts/bootstrap.sh test)")


def import_simgrid() -> ModuleType:
    """``import simgrid``, loading libsimgrid first so that no LD_LIBRARY_PATH is needed."""
    if "simgrid" in sys.modules:
        return sys.modules["simgrid"]
    if not _LOADED:
        path = libsimgrid_path()
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        _LOADED.append(path)
    # the module's init logs "Configuration change: Set 'contexts/factory'" to stderr before
    # any --log option can apply; keep stderr for messages that matter
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import simgrid
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return simgrid


def new_engine(*config: str) -> Any:
    """A SimGrid Engine with quiet logs and the given ``--cfg`` items (``"key:value"``)."""
    simgrid = import_simgrid()
    args = ["hcsim", "--log=root.thresh:warning"] + [f"--cfg={c}" for c in config]
    return simgrid.Engine(args)


def _child(conn: Any, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    try:
        conn.send(("ok", fn(*args, **kwargs)))
    except HcsimError as exc:
        conn.send(("hcsim", str(exc)))
    except BaseException as exc:  # noqa: BLE001 - everything crosses back as text
        conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
    finally:
        conn.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def run_isolated(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` in a forked process (its own SimGrid engine); return its result."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args, kwargs))
    proc.start()
    send.close()
    try:
        status, payload = recv.recv()
    except EOFError:
        proc.join()
        raise HcsimError(
            f"the SimGrid process stopped without an answer (exit code {proc.exitcode}; see its message above)"
        ) from None
    finally:
        recv.close()
    proc.join()
    if status == "ok":
        return payload
    if status == "hcsim":
        raise HcsimError(payload)
    raise RuntimeError(payload)
