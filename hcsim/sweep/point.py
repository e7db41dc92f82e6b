"""Run one sweep point in this process: ``python -m hcsim.sweep.point`` (JSON in, JSON out).

Reads ``{"function": "module:function", "params": {...}}`` on stdin, calls the function,
and writes ``{"result": ...}`` (or ``{"error": "..."}``) as the last line of stdout.
Whatever the function prints goes to stderr, so it cannot corrupt the answer.
A point is a process of its own because a SimGrid engine is one per process.
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback

#: prefix of the answer line, so that stray output written at exit cannot be mistaken for it
MARKER = "hcsim-point-answer: "


def main() -> int:
    request = json.loads(sys.stdin.read())
    out = sys.stdout
    try:
        from hcsim.sweep.spec import resolve_function

        fn = resolve_function(request["function"])
        with contextlib.redirect_stdout(sys.stderr):
            result = fn(**request["params"])
        answer = {"result": result}
    except Exception as exc:  # noqa: BLE001 - every failure is recorded with the point
        traceback.print_exc(file=sys.stderr)
        answer = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    out.write(MARKER + json.dumps(answer, default=str) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
