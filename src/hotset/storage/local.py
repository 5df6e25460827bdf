"""A directory on a local (or locally mounted) file system."""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from hotset.errors import HotsetError
from hotset.fsutil import atomic_write
from hotset.storage.base import StatsCounter, StoreStats, check_key
from hotset.storage.ranges import Range, check_ranges

#: open without following a symbolic link in the last component (0 where there is none)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: what ``open(..., O_NOFOLLOW)`` fails with on a symbolic link (Linux/macOS, FreeBSD)
_LINK_ERRNOS = (errno.ELOOP, errno.EMLINK)


def _absent(exc: OSError) -> bool:
    """The key names no file, and never will: a :class:`HotsetError`, not a retried
    OSError (a name too long for the file system was retried for a minute)."""
    return isinstance(exc, FileNotFoundError | IsADirectoryError | NotADirectoryError) or (
        exc.errno == errno.ENAMETOOLONG
    )


class LocalStore:
    """Files under ``root``; writes go to a temporary name and are renamed into place.

    The rename is what makes a write atomic: a reader (another DataLoader worker,
    another job) sees the old bytes or the new bytes, never half a file, and a
    write that fails midway leaves no partial file and no temporary behind.
    Names starting with ``.`` are temporaries and are not listed.

    Every key stays inside ``root``: a key that resolves, through a symbolic
    link, to a file or folder outside it is a :class:`HotsetError` naming the
    key, for reads, sizes, existence checks and writes alike (a data set's files
    could otherwise hand training, or a cache shared with others, any file the
    job can read). Links that stay inside are followed. Cost: the file is opened
    with ``O_NOFOLLOW`` (a link fails the open and only then is resolved), and
    each folder is resolved once per process and remembered, so a plain read
    pays nothing extra; a folder swapped for an outside link after that first
    check is not noticed (that takes write access to the data set itself).
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
        self._root_text = os.fspath(self.root)
        #: where the root really is (links resolved): every key must resolve below it
        self._real_root = os.path.realpath(self.root)
        #: folders (relative, "/"-separated) already resolved inside the root
        self._folders_inside: set[str] = {""}

    def _path(self, key: str) -> Path:
        return Path(self._checked(key))

    def _checked(self, key: str) -> str:
        """The file name of ``key``, once its folder is known to resolve inside the root."""
        folder = check_key(key).rpartition("/")[0]
        if folder not in self._folders_inside:
            self._refuse_outside(key, os.path.join(self._root_text, folder))
            self._folders_inside.add(folder)
        return os.path.join(self._root_text, key)

    def _refuse_outside(self, key: str, path: str) -> None:
        """Raise unless ``path`` (of ``key``) resolves, links and all, inside the root."""
        real = os.path.realpath(path)
        if os.path.commonpath([real, self._real_root]) != self._real_root:
            raise HotsetError(
                f"key {key!r} leads outside the store root {self._root_text!r} through a "
                f"symbolic link (to {real!r}): hotset reads only files inside a data set's "
                "root; copy the file into it, or open the data set where its files are"
            )

    def _missing(self, key: str) -> HotsetError:
        return HotsetError(f"no such key {key!r} in store {str(self.root)!r}")

    def read(self, key: str) -> bytes:
        path = self._checked(key)
        start = time.perf_counter()
        try:
            data = self._read_file(key, path)
        except OSError as exc:
            if not _absent(exc):
                raise
            raise self._missing(key) from None
        self._stats.add_read(len(data), time.perf_counter() - start)
        return data

    def _open(self, key: str, path: str) -> int:
        try:
            return os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except OSError as exc:
            if exc.errno not in _LINK_ERRNOS or not os.path.islink(path):
                raise
            self._refuse_outside(key, path)  # a link: followed only if it stays inside
            return os.open(path, os.O_RDONLY | _CLOEXEC)

    def _read_file(self, key: str, path: str) -> bytes:
        fd = self._open(key, path)
        try:
            return _read_all(fd)
        finally:
            os.close(fd)

    def read_ranges(self, key: str, ranges: Sequence[Range]) -> list[bytes]:
        """Byte ranges of one file: one open, one ``pread`` per range; counted as one
        request moving the ranges' bytes (:mod:`hotset.storage.ranges`)."""
        checked = check_ranges(key, ranges)
        path = self._checked(key)
        start = time.perf_counter()
        try:
            fd = self._open(key, path)
        except OSError as exc:
            if not _absent(exc):
                raise
            raise self._missing(key) from None
        try:
            parts = [_pread_all(fd, offset, length) for offset, length in checked]
        finally:
            os.close(fd)
        self._stats.add_read(sum(map(len, parts)), time.perf_counter() - start)
        return parts

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        return [self.read(k) for k in keys]

    def _stat(self, key: str) -> os.stat_result:
        path = self._checked(key)
        info = os.stat(path, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            self._refuse_outside(key, path)
            info = os.stat(path)
        return info

    def size(self, key: str) -> int:
        try:
            info = self._stat(key)
        except OSError as exc:
            if not _absent(exc):
                raise
            raise self._missing(key) from None
        if not stat.S_ISREG(info.st_mode):
            raise self._missing(key)
        return info.st_size

    def exists(self, key: str) -> bool:
        try:
            return stat.S_ISREG(self._stat(key).st_mode)
        except OSError as exc:
            if not _absent(exc):
                raise
            return False

    def write(self, key: str, data: bytes) -> None:
        path = self._path(key)
        start = time.perf_counter()
        atomic_write(path, data)
        self._stats.add_write(len(data), time.perf_counter() - start)

    def list_keys(self) -> Iterator[str]:
        """Every file's key, sorted; a link to a file outside the root is left out."""
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                if path.is_symlink() and not self._resolves_inside(path):
                    continue
                yield path.relative_to(self.root).as_posix()

    def _resolves_inside(self, path: Path) -> bool:
        real = os.path.realpath(path)
        return os.path.commonpath([real, self._real_root]) == self._real_root

    def stats(self) -> StoreStats:
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        self._stats.reset()

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"


def _read_all(fd: int) -> bytes:
    """The whole file behind ``fd``: one read call when it holds what fstat says."""
    size = os.fstat(fd).st_size
    first = os.read(fd, size + 1)
    if len(first) == size:
        return first
    parts = [first]  # the file grew or shrank meanwhile, or is larger than one read returns
    while chunk := os.read(fd, 1 << 24):
        parts.append(chunk)
    return b"".join(parts)


def _pread_all(fd: int, offset: int, length: int) -> bytes:
    """``length`` bytes at ``offset`` (fewer only at the end of the file)."""
    first = os.pread(fd, length, offset)
    if len(first) == length or not first:
        return first
    parts = [first]
    got = len(first)
    while got < length and (more := os.pread(fd, length - got, offset + got)):
        parts.append(more)
        got += len(more)
    return b"".join(parts)
