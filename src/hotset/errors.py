"""The exception types the command line turns into a one-line error.

Library code raises :class:`HotsetError` (or a subclass) so that the CLI can
print a single line naming the culprit and exit with code 2, and a DataLoader
worker can hand it back whole (:mod:`hotset.torch.fetch`), while programming
errors still surface as tracebacks.

Two kinds:

* bad input or configuration: :class:`HotsetError` itself, a :class:`ValueError`
  (``except ValueError`` around a call with a bad argument keeps working);
* a failure at run time, not the caller's input -- a store, a cache server, a
  process, bytes that changed under us: a :class:`HotsetRuntimeError`, which is
  a :class:`RuntimeError` too, so a caller tells the two apart.

A runtime error is still a :class:`HotsetError`, and so, for now, still a
``ValueError``: every ``except HotsetError`` (the CLI, the worker path, the
loader's fallbacks) must keep catching it, and making :class:`HotsetError`
itself not a ``ValueError`` would change the thousand places that raise it for
bad input. Catch :class:`HotsetRuntimeError` (or ``RuntimeError``) *before*
``ValueError`` to handle a failure apart from a mistake.
"""

from __future__ import annotations

from collections.abc import Iterable


class HotsetError(ValueError):
    """Bad input or configuration; the message names the culprit.

    Also the base of :class:`HotsetRuntimeError`: ``except HotsetError`` catches
    everything hotset raises on purpose.
    """


class HotsetRuntimeError(HotsetError, RuntimeError):
    """A failure at run time rather than bad input: storage, a cache, a process, the data.

    Catchable as :class:`HotsetError` (and, through it, as ``ValueError``: see the
    module docstring) and as :class:`RuntimeError`.
    """


class IntegrityError(HotsetRuntimeError):
    """Stored bytes do not match what the manifest promises."""


class WorkerDied(HotsetRuntimeError):
    """A DataLoader worker of the loader died (killed, or by the out-of-memory killer);
    the message names it, its pid and its signal or exit code where torch knew them."""


class StorageError(HotsetRuntimeError):
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
