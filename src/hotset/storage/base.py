"""What every store is: bytes by key, with honest counters.

Counters exist on every store because users judge hotset by storage reads per
epoch; a store that cannot say how much it was asked for cannot be judged.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol, runtime_checkable

from hotset.errors import HotsetError


def check_key(key: str) -> str:
    """Return ``key`` if it is a canonical relative path, else raise :class:`HotsetError`.

    Caches, manifests and traces identify bytes by key *string*, so one file must
    have exactly one spelling: no empty, ``.`` or ``..`` parts, no leading ``/``,
    no doubled or trailing ``/``. Every store checks keys with this one rule so a
    key that works on a local directory also works on ``memory://`` or S3.
    """
    if not isinstance(key, str):
        raise HotsetError(f"bad store key {key!r}: must be a string")
    parts = key.split("/")
    if (
        not key
        or key.startswith("/")
        or "\x00" in key
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise HotsetError(
            f"bad store key {key!r}: must be a relative path inside the store "
            "('/'-separated, no empty, '.' or '..' parts)"
        )
    return key


@dataclass
class StoreStats:
    """Totals since creation (or the last :meth:`StatsCounter.reset`).

    ``seconds`` is wall time spent in reads for real stores and modeled time for
    a virtual-clock :class:`~hotset.storage.throttled.ThrottledStore`.
    """

    reads: int = 0
    bytes_read: int = 0
    writes: int = 0
    bytes_written: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


class StatsCounter:
    """Thread-safe accumulation of :class:`StoreStats` (loaders read from threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats = StoreStats()

    def add_read(self, nbytes: int, seconds: float, count: int = 1) -> None:
        with self._lock:
            self._stats.reads += count
            self._stats.bytes_read += nbytes
            self._stats.seconds += seconds

    def add_write(self, nbytes: int, seconds: float) -> None:
        with self._lock:
            self._stats.writes += 1
            self._stats.bytes_written += nbytes
            self._stats.seconds += seconds

    def snapshot(self) -> StoreStats:
        with self._lock:
            return StoreStats(**asdict(self._stats))

    def reset(self) -> None:
        with self._lock:
            self._stats = StoreStats()

    # A lock cannot cross a process boundary. A store handed to a spawned
    # DataLoader worker starts counting afresh there: each process counts its
    # own reads, and the parent's totals stay with the parent.
    def __getstate__(self) -> dict[str, object]:
        return {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self._lock = threading.Lock()
        self._stats = StoreStats()


@runtime_checkable
class Store(Protocol):
    """Bytes by string key. Keys are '/'-separated paths relative to the store root."""

    def read(self, key: str) -> bytes: ...

    def read_many(self, keys: Sequence[str]) -> list[bytes]: ...

    def size(self, key: str) -> int: ...

    def write(self, key: str, data: bytes) -> None: ...

    def exists(self, key: str) -> bool: ...

    def list_keys(self) -> Iterable[str]: ...

    def stats(self) -> StoreStats: ...

    def reset_stats(self) -> None: ...
