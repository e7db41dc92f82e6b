"""The ``hcsim`` command: one module per subcommand; :mod:`.main` holds their table, parses and dispatches."""

from hcsim.cli.main import COMMANDS, main, make_parser

__all__ = ["COMMANDS", "main", "make_parser"]
