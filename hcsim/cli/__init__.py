"""The ``hcsim`` command: one module per subcommand; :mod:`.main` parses and dispatches."""

from hcsim.cli.main import COMMAND_MODULES, main, make_parser

__all__ = ["COMMAND_MODULES", "main", "make_parser"]
