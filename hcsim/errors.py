"""The one exception type users see for bad input.

Every check in hcsim raises :class:`HcsimError` with a single line that names the
offending item and says what would be valid. The CLI prints that line and exits 2;
library users catch it like any ``ValueError``.
"""


class HcsimError(ValueError):
    """Bad input: the message names the item and what would be valid."""
