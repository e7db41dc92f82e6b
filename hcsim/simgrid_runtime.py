"""SimGrid access: load the bindings, and give every simulation a process of its own.

* :func:`import_simgrid` loads ``libsimgrid.so.4.1`` by absolute path before ``import
  simgrid`` (the extension pip builds has no rpath to it; ``scripts/bootstrap.sh`` also
  installs a ``.pth`` hook doing the same).
* :func:`run_isolated` runs a function in a forked child, which may create the one
  SimGrid Engine a process is allowed, and returns its (picklable) result; an
  HcsimError raised in the child is re-raised in the parent. The child pins itself to a
  CPU no other simulation holds (:func:`pin_to_free_cpu`; ``HCSIM_PIN_CPU=0`` turns it
  off), never outlives its parent (``PR_SET_PDEATHSIG``, its own end of the result pipe
  only) and ignores Ctrl-C, which the parent handles by killing it.
* :func:`load_platform` with ``one_actor=True`` runs a simulation driven by a single
  Python actor on SimGrid's raw contexts instead of threads (``HCSIM_CONTEXTS=thread``
  turns it off; per run, ``EngineOptions.raw_contexts``): safe with one actor, whose
  frames are pushed on the main thread's when it starts and all popped when it ends,
  with only C++ running while it is switched out. Results are the same under both
  (``tests/engine/test_determinism.py``). :func:`settings` reads hcsim's environment.

Guide: docs/workloads-and-engine.md, "Simulation speed"; measurements: docs/history.md.
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
import glob
import importlib.util
import multiprocessing
import os
import signal
import site
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from types import ModuleType
from typing import Any, TypeVar

from hcsim.errors import HcsimError

__all__ = [
    "Isolated",
    "Settings",
    "die_with_parent",
    "import_simgrid",
    "libsimgrid_path",
    "load_platform",
    "new_engine",
    "run_isolated",
    "settings",
    "start_isolated",
]

T = TypeVar("T")
_LOADED: list[str] = []


@dataclass(frozen=True)
class Settings:
    """hcsim's environment variables: defaults of the run options, never read on a hot path."""

    contexts: str  # HCSIM_CONTEXTS: "raw" (default) or "thread" for a single-actor simulation
    pin_cpu: bool  # HCSIM_PIN_CPU: "0" turns CPU pinning off
    max_flows_at_once: str | None  # HCSIM_MAX_FLOWS_AT_ONCE, as written (the engine validates it)


def settings() -> Settings:
    """The environment variables hcsim reads: the only place that reads them (once per run, never on a hot path)."""
    env = os.environ
    return Settings(env.get("HCSIM_CONTEXTS", "raw"), env.get("HCSIM_PIN_CPU", "1") != "0",
                    env.get("HCSIM_MAX_FLOWS_AT_ONCE"))  # fmt: skip


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
    engine = simgrid.Engine(args)
    if _IGNORE_INTERRUPTS:  # SimGrid installs its own SIGINT handler (print the actors, exit): keep ignoring
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return engine


_IGNORE_INTERRUPTS = False  # set in a simulation child: its parent handles Ctrl-C
_CPU_CLAIM: list[int] = []  # the lock file descriptor this process holds, if any


def pin_to_free_cpu() -> None:
    """Pin this process (and the threads it will start) to one CPU no other simulation holds.

    Simulations on one machine coordinate through per-CPU lock files (``flock``, held for
    the life of the process and released by the kernel when it ends): a process takes
    the first free CPU, starting from the one it runs on. If every CPU is taken it stays
    unpinned.
    """
    if _CPU_CLAIM or not settings().pin_cpu:
        return
    try:
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) <= 1:
            return
        with open("/proc/self/stat") as f:
            here = int(f.read().rsplit(")", 1)[1].split()[36])  # field 39: CPU last run on
        start = allowed.index(here) if here in allowed else 0
        lock_dir = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
        for cpu in allowed[start:] + allowed[:start]:
            fd = os.open(os.path.join(lock_dir, f"hcsim-cpu{cpu}-uid{os.getuid()}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            os.sched_setaffinity(0, {cpu})
            _CPU_CLAIM.append(fd)
            return
    except (OSError, ValueError, IndexError, AttributeError):
        pass


def load_platform(
    path: str, *, one_actor: bool = False, raw_contexts: bool | None = None, config: tuple[str, ...] = ()
) -> Any:
    """A new Engine with ``path`` loaded; SimGrid's parse errors become one-line HcsimErrors.

    ``one_actor``: the simulation will run exactly one Python actor, which may then use
    SimGrid's fast ``raw`` contexts (see the module docstring) if ``raw_contexts`` (a run's
    option; ``None``: unless ``HCSIM_CONTEXTS=thread``). ``config``: ``--cfg`` items
    (``"network/model:raw"``); they take precedence over the file's ``<config>``. Keep the
    returned engine referenced while its hosts and links are used.
    """
    if raw_contexts is None:
        raw_contexts = settings().contexts != "thread"
    fast = one_actor and raw_contexts
    engine = new_engine(*(["contexts/factory:raw"] if fast else []), *config)
    try:
        engine.load_platform(path)
    except Exception as exc:  # noqa: BLE001 - SimGrid raises several types
        raise HcsimError(f"SimGrid could not load '{path}': {str(exc).splitlines()[0]}") from None
    return engine


_PR_SET_PDEATHSIG = 1


def _libc_prctl() -> Any:
    """libc's ``prctl``, looked up now: a child forked from a threaded process must not call dlsym."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()
_FORK_LOCK = threading.Lock()  # no fork while another thread holds both ends of a fresh pipe
_PARENT_ENDS: set[Any] = set()  # receiving ends this process holds for its live children


def die_with_parent(parent: int, sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux; elsewhere nothing).

    ``parent`` is the parent's pid read before the fork: if it already died before the
    request took effect (then the process has a new parent), exit now.
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _child(parent: int, conn: Any, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    global _IGNORE_INTERRUPTS, _FORK_LOCK
    _IGNORE_INTERRUPTS = True  # Ctrl-C is the parent's to handle: it kills this process
    _FORK_LOCK = threading.Lock()  # the parent forked holding its own: a child that forks in turn needs a free one
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's Python handler: just end
    die_with_parent(parent)
    for end in _PARENT_ENDS:  # the parent's ends of this and any sibling's pipe: a dead reader means EPIPE
        end.close()
    _PARENT_ENDS.clear()
    pin_to_free_cpu()
    # Everything inherited from the parent (a workload graph can be 100k dicts) is
    # permanent for the child: the cyclic GC stops rescanning it at every full collection
    # (what it saved: docs/history.md, "Set-up outside the SimGrid loop").
    gc.freeze()
    try:
        try:
            answer: tuple[str, Any] = ("ok", fn(*args, **kwargs))
        except HcsimError as exc:
            answer = ("hcsim", str(exc))
        except BaseException as exc:  # noqa: BLE001 - everything crosses back as text
            answer = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        try:
            conn.send(answer)
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
            conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
    except OSError:  # the parent is gone (EPIPE: this process holds no reading end): nobody to answer
        pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _receive(conn: Any) -> tuple[str, Any]:
    """The child's answer, unpickled with the cyclic GC paused.

    A run's result is tens of thousands of small acyclic objects (its trace, its per-XPU
    intervals), and this process may hold a large heap (the workload graph it forked with:
    40k vertices at 1024 XPUs), which every full collection triggered by those allocations
    rescans: 0.10 s to unpickle a 1024-XPU LLaMA2-13B result, 0.03 s with the GC paused. It is
    paused only while the bytes already received are unpickled, never while the child runs.
    """
    data = conn.recv_bytes()
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ForkingPickler.loads(data)
    finally:
        if enabled:
            gc.enable()


class Isolated:
    """A function running in a forked child (:func:`start_isolated`); :meth:`result` waits for its answer.

    :meth:`stop` kills and reaps the child if it has not answered (what an interrupted
    caller does, as :meth:`result` does itself when interrupted while waiting).
    """

    def __init__(self, proc: Any, recv: Any) -> None:
        self.proc, self.recv, self.answered = proc, recv, False

    def result(self) -> Any:
        try:
            status, payload = _receive(self.recv)
            self.answered = True
        except EOFError:
            self.proc.join()
            raise HcsimError(
                f"the SimGrid process stopped without an answer (exit code {self.proc.exitcode}; see its message above)"
            ) from None
        finally:
            self.stop()
        if status == "ok":
            return payload
        if status == "hcsim":
            raise HcsimError(payload)
        raise RuntimeError(payload)

    def stop(self) -> None:
        with _FORK_LOCK:
            if self.recv in _PARENT_ENDS:
                _PARENT_ENDS.discard(self.recv)
                self.recv.close()
        if not self.answered and self.proc.exitcode is None:  # interrupted: stop the simulation, then go on
            self.proc.kill()
        self.proc.join()


def start_isolated(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Isolated:
    """Start ``fn(*args, **kwargs)`` in a forked process (its own SimGrid engine); its :class:`Isolated`."""
    ctx = multiprocessing.get_context("fork")
    with _FORK_LOCK:
        recv, send = ctx.Pipe(duplex=False)
        _PARENT_ENDS.add(recv)
        proc = ctx.Process(target=_child, args=(os.getpid(), send, fn, args, kwargs))
        try:
            proc.start()
        finally:
            send.close()
    return Isolated(proc, recv)


def run_isolated(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` in a forked process (its own SimGrid engine); return its result.

    If this process is interrupted (Ctrl-C) or fails while waiting, the child is killed
    and reaped before the exception goes on: no simulation is left behind.
    """
    return start_isolated(fn, *args, **kwargs).result()
