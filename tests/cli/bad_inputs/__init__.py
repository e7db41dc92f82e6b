"""Bad-input cases: one line each, run through the real ``hcsim`` command by ``tests/cli/test_bad_inputs.py``.

Every module ``cases_*.py`` in this folder defines ``CASES``, a list of :class:`Case`
built with :func:`case`. A case is a command line (``{tmp}`` is the case's own empty
directory), the files to write into ``{tmp}`` first, and a regular expression the error
line must match (case-insensitive: the item it names or what would be valid). The
runner checks the promise every command makes for bad input: exit status 2, exactly
one line on stderr starting ``hcsim: error:``, no traceback, no file left behind (the
directory holds only the inputs afterwards) and an answer within ``timeout`` seconds.

Adding a case is one line::

    case("graphml-zero-bandwidth", "platform check {tmp}/t.graphml", "bandwidth",
         files={"t.graphml": graphml(edges=[("a", "b", {"bandwidth": 0})])}),
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` after ``hcsim``, the input ``files`` and the expected error ``match``."""

    id: str
    argv: str
    match: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    timeout: float = 60.0
    slow: bool = False
    stdin: str | None = None


def case(
    id: str,
    argv: str,
    match: str,
    *,
    files: dict[str, str | bytes] | None = None,
    timeout: float = 60.0,
    slow: bool = False,
    stdin: str | None = None,
) -> Case:
    """A :class:`Case`; ``argv`` is split like a shell would (``shlex``) after ``{tmp}`` is filled in."""
    return Case(id, argv, match, dict(files or {}), timeout, slow, stdin)
