"""A store wrapper for fault tests (no pytest here): forwards everything, fails where told.

Subclasses decide in ``_before(key)`` whether a request fails before it
reaches the real store underneath; the retry tests and the fault-injection
suite both build on it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from hotset.storage import Store, StoreStats


class FaultyStore:
    """Delegates the Store protocol to ``inner``; ``_before`` may raise first."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.faults = 0
        self._lock = threading.Lock()

    def _before(self, key: str) -> None:
        """Raise here to fail this request before it reaches the inner store."""

    def read(self, key: str) -> bytes:
        self._before(key)
        return self.inner.read(key)

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        for key in keys:
            self._before(key)
        return self.inner.read_many(keys)

    def size(self, key: str) -> int:
        self._before(key)
        return self.inner.size(key)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def write(self, key: str, data: bytes) -> None:
        self.inner.write(key, data)

    def list_keys(self) -> Iterable[str]:
        return self.inner.list_keys()

    def stats(self) -> StoreStats:
        return self.inner.stats()

    def reset_stats(self) -> None:
        self.inner.reset_stats()

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
