"""The one exception type the command line turns into a one-line error.

Library code raises :class:`HotsetError` (or a subclass) for bad input so that
the CLI can print a single line naming the culprit and exit with code 2, while
programming errors still surface as tracebacks.
"""

from __future__ import annotations

from collections.abc import Iterable


class HotsetError(ValueError):
    """Bad input or configuration; the message names the culprit."""


class IntegrityError(HotsetError):
    """Stored bytes do not match what the manifest promises."""


class StorageError(HotsetError):
    """A store read that failed for good; the message names the key and the store.

    Raised by :class:`hotset.storage.retry.RetryingStore` for a permanent error
    (a missing file, a denied permission) or once its retries or deadline are
    spent on transient ones; the store's own exception is chained as ``__cause__``.
    Built from one message string, so it survives the trip from a DataLoader
    worker to the main process, which re-creates exceptions from their message.
    """


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`` (did you mean 'lru'?)`` for the choice closest to a misspelt ``word``, else ``""``.

    One helper so that every name a user types (a system, a system's option, a
    store preset, a store option) is answered the same way when it is wrong.
    """
    import difflib

    if not isinstance(word, str):
        return ""
    near = difflib.get_close_matches(word, list(choices), n=1)
    if not near:
        near = difflib.get_close_matches(word.lower(), list(choices), n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""
