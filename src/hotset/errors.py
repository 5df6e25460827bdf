"""The one exception type the command line turns into a one-line error.

Library code raises :class:`HotsetError` (or a subclass) for bad input so that
the CLI can print a single line naming the culprit and exit with code 2, while
programming errors still surface as tracebacks.
"""

from __future__ import annotations


class HotsetError(ValueError):
    """Bad input or configuration; the message names the culprit."""


class IntegrityError(HotsetError):
    """Stored bytes do not match what the manifest promises."""
