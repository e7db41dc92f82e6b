"""The ``hcsim`` command: one module per subcommand, each with ``main(args) -> int``.

:mod:`.main` holds the table of subcommands (:data:`COMMANDS`), parses and dispatches;
:mod:`.parsers` builds every option with the standard library only, so importing this
package stays light: a subcommand's module, and the library with it, is imported only
when that subcommand runs. Only :mod:`hcsim.cli` modules import :mod:`hcsim.cli`.
"""

from hcsim.cli.main import COMMANDS, main, make_parser

__all__ = ["COMMANDS", "main", "make_parser"]
