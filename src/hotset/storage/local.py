"""A directory on a local (or locally mounted) file system."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from hotset.errors import HotsetError
from hotset.fsutil import atomic_write
from hotset.storage.base import StatsCounter, StoreStats, check_key


class LocalStore:
    """Files under ``root``; writes go to a temporary name and are renamed into place.

    The rename is what makes a write atomic: a reader (another DataLoader worker,
    another job) sees the old bytes or the new bytes, never half a file, and a
    write that fails midway leaves no partial file and no temporary behind.
    Names starting with ``.`` are temporaries and are not listed.
    """

    def __init__(self, root: str | os.PathLike[str], *, create: bool = False) -> None:
        self.root = Path(root)
        if create:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise HotsetError(f"cannot create store root {str(self.root)!r}: {exc}") from None
        if not self.root.is_dir():
            raise HotsetError(f"store root {str(self.root)!r} is not a directory")
        self._stats = StatsCounter()

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def _missing(self, key: str) -> HotsetError:
        return HotsetError(f"no such key {key!r} in store {str(self.root)!r}")

    def read(self, key: str) -> bytes:
        path = self._path(key)
        start = time.perf_counter()
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise self._missing(key) from None
        self._stats.add_read(len(data), time.perf_counter() - start)
        return data

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        return [self.read(k) for k in keys]

    def size(self, key: str) -> int:
        try:
            info = self._path(key).stat()
        except (FileNotFoundError, NotADirectoryError):
            raise self._missing(key) from None
        if not stat.S_ISREG(info.st_mode):
            raise self._missing(key)
        return info.st_size

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def write(self, key: str, data: bytes) -> None:
        path = self._path(key)
        start = time.perf_counter()
        atomic_write(path, data)
        self._stats.add_write(len(data), time.perf_counter() - start)

    def list_keys(self) -> Iterator[str]:
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                yield path.relative_to(self.root).as_posix()

    def stats(self) -> StoreStats:
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        self._stats.reset()

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"
