"""``hcsim ARGS`` in a fresh process forked from an interpreter that has already imported the command.

A bad input costs the command its imports (networkx, numpy, SimGrid, hcsim: over a second
of CPU) and then milliseconds of work. :class:`ForkedCli` starts one server interpreter
per subcommand (``python -c``, like the real ``hcsim``), which imports ``hcsim.cli`` and
that subcommand's handler module (what the command imports right after parsing its
arguments) and nothing else; each call forks it, and the child sets ``sys.argv``, the
working directory, stdin/stdout/stderr and the environment, then ends exactly as
``python -c "import sys; from hcsim.cli import main; sys.exit(main())"`` does (the
interpreter's own exit: atexit, threads, flushing). Exit status, output, files written
and hangs (the child is killed at the timeout) are the process's own. A server whose
imports write anything to stderr refuses to start (the real command would print it).
``HCSIM_TEST_FRESH_CLI=1`` runs every call in a fresh interpreter instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

FRESH = [sys.executable, "-c", "import sys; from hcsim.cli import main; sys.exit(main())"]

_SERVER = r"""
import importlib, json, os, select, signal, sys
from hcsim.cli.main import main
if sys.argv[1]:
    importlib.import_module(sys.argv[1])
sys.stderr.flush()
os.write(1, b"ready\n")
requests = os.fdopen(0, "rb", buffering=0, closefd=False)
while True:
    line = b""
    while not line.endswith(b"\n"):
        chunk = requests.read(1)
        if not chunk:
            os._exit(0)
        line += chunk
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        break
    fd = os.pidfd_open(pid)
    timed_out = not select.select([fd], [], [], req["timeout"])[0]
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    os.write(1, (json.dumps({"status": os.waitstatus_to_exitcode(status), "timeout": timed_out}) + "\n").encode())
# the child: become the command (dup2 replaces the request pipe on fd 0)
for fd, name in enumerate(("stdin", "stdout", "stderr")):
    new = os.open(req[name], os.O_RDONLY if fd == 0 else os.O_WRONLY)
    os.dup2(new, fd)
    os.close(new)
sys.stdin = sys.__stdin__ = open(0, "r", closefd=False)
os.chdir(req["cwd"])
os.environ.clear()
os.environ.update(req["env"])
sys.argv = ["-c", *req["argv"]]
sys.exit(main())
"""

_HANDLERS = {
    "platform": "hcsim.cli.platform",
    "run": "hcsim.cli.run",
    "collective": "hcsim.cli.collective",
    "sweep": "hcsim.cli.sweep",
    "serve": "hcsim.cli.serve",
    "queue": "hcsim.cli.serve",
    "cluster": "hcsim.cli.cluster",
    "queue-selection": "hcsim.cli.queue_selection",
    "queues": "hcsim.cli.queue_selection",
    "demo": "hcsim.cli.demo",
}


@dataclass
class Result:
    """What ``subprocess.run(..., capture_output=True, text=True)`` returns, and whether it hung."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


class ForkedCli:
    """Runs ``hcsim ARGS``; one server per subcommand, started on first use, stopped by :meth:`close`."""

    def __init__(self) -> None:
        self._servers: dict[str, subprocess.Popen] = {}
        self.fresh = os.environ.get("HCSIM_TEST_FRESH_CLI") == "1"

    def _server(self, module: str) -> subprocess.Popen:
        server = self._servers.get(module)
        if server is None:
            server = subprocess.Popen([sys.executable, "-c", _SERVER, module], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
            if server.stdout.readline() != b"ready\n":
                raise RuntimeError(f"the forking server for {module!r} did not start: {server.stderr.read()!r}")
            os.set_blocking(server.stderr.fileno(), False)
            said = server.stderr.read()
            if said:
                raise RuntimeError(f"importing {module!r} wrote to stderr, which the real command would show: {said!r}")
            self._servers[module] = server
        return server

    def run(self, argv: list[str], cwd: str, timeout: float, stdin: str | None = None) -> Result:
        """``hcsim *argv`` in ``cwd`` with ``stdin`` (None: empty), killed after ``timeout`` seconds."""
        if self.fresh:
            try:
                p = subprocess.run([*FRESH, *argv], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                                   input=stdin if stdin is not None else "")  # fmt: skip
            except subprocess.TimeoutExpired:
                return Result(-9, "", "", timed_out=True)
            return Result(p.returncode, p.stdout, p.stderr)
        command = next((a for a in argv if not a.startswith("-")), "")
        server = self._server(_HANDLERS.get(command, ""))
        with tempfile.TemporaryDirectory(prefix="forked-cli-") as io_dir:
            paths = {name: os.path.join(io_dir, name) for name in ("stdin", "stdout", "stderr")}
            for name, path in paths.items():
                with open(path, "w") as f:
                    f.write(stdin or "" if name == "stdin" else "")
            request = {"argv": list(argv), "cwd": str(cwd), "timeout": timeout, "env": dict(os.environ), **paths}
            server.stdin.write((json.dumps(request) + "\n").encode())
            server.stdin.flush()
            answer = json.loads(server.stdout.readline())
            with open(paths["stdout"]) as out, open(paths["stderr"]) as err:
                return Result(answer["status"], out.read(), err.read(), timed_out=answer["timeout"])

    def close(self) -> None:
        for server in self._servers.values():
            server.stdin.close()
            server.wait(timeout=30)
        self._servers.clear()
