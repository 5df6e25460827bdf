"""Warnings shown once per process, however often the code that raises them runs.

Why: Python's own "once per location" memory is cleared whenever any code changes
the warning filters (``warnings.catch_warnings`` does, on entry and exit), so a
warning raised each time a DataLoader starts its workers -- torch's "This
DataLoader will create N worker processes ..." on a machine with fewer cores --
was printed again for every epoch of every row of a benchmark (77 times in one
demo). :func:`once` re-emits what a block raised, each (category, text) at most
once per process, through the user's filters as they stand (an ``"error"`` filter
still raises, an ``"ignore"`` one still hides).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["call_once_warned", "once", "warn_once"]

T = TypeVar("T")

_seen: set[tuple[type[Warning], str]] = set()
_lock = threading.Lock()


def _first(category: type[Warning], text: str) -> bool:
    with _lock:
        if (category, text) in _seen:
            return False
        _seen.add((category, text))
        return True


def warn_once(text: str, category: type[Warning] = UserWarning, *, stacklevel: int = 1) -> None:
    """``warnings.warn(text, category)`` unless this process has shown that text already."""
    if _first(category, text):
        warnings.warn(text, category, stacklevel=stacklevel + 1)


@contextmanager
def once(*, ignore: tuple[str, ...] = ()) -> Iterator[None]:
    """Run the block with its warnings held back, then show each one this process has not
    shown before, at the place it was raised. Messages starting with one of ``ignore``
    are dropped (what a block knows it cannot act on)."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")  # record every one; the filters apply on re-emit
            caught = got
            yield
    finally:  # shown even when the block raised
        for w in caught:
            text = str(w.message)
            if text.startswith(ignore) or not _first(w.category, text):
                continue
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def call_once_warned(fn: Callable[[], T], *, ignore: tuple[str, ...] = ()) -> T:
    """``fn()`` under :func:`once`: e.g. ``iter(dataloader)``, which warns on every call."""
    with once(ignore=ignore):
        return fn()
