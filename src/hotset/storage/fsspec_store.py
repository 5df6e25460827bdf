"""Any fsspec URL as a store: ``memory://``, ``file://``, ``gs://``, ...

(``open_store`` opens ``s3://`` with :class:`~hotset.storage.s3_store.S3Store`,
whose requests are counted one GET each; an ``FsspecStore`` of ``s3://`` made
directly goes through s3fs.)

fsspec is a core dependency, but the back ends behind its protocols (s3fs, gcsfs,
...) are optional packages. They are imported by fsspec only when a URL needs
them, and a missing one becomes a :class:`HotsetError` that names the extra to
install, so ``hotset`` itself never fails to import for lack of a cloud SDK.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hotset.errors import HotsetError
from hotset.storage.base import StatsCounter, StoreStats, check_key
from hotset.storage.ranges import Range, check_ranges, coalesce

# Protocols with a hint of their own: open_store gives s3:// to hotset's S3Store
# (boto3, the s3 extra); an FsspecStore of s3:// needs fsspec's s3fs.
_HINTS = {
    "s3": "pip install s3fs, or open s3:// URLs with hotset.storage.open_store, whose S3 "
    "store needs only pip install hotset[s3]",
    "s3a": "pip install s3fs",
}
# Object stores: a single PUT is already atomic (readers see all or nothing) and a
# "rename" is a copy plus a delete, so writing to a temporary first buys nothing.
# memory:// assigns the whole buffer at once.
_ATOMIC_PUT = frozenset({"memory", "s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "oss"})
# Characters that make fsspec treat a path as a glob in batched calls.
_GLOB_CHARS = frozenset("*?[")
# What fsspec raises for a key that names nothing readable.
_MISSING = (FileNotFoundError, IsADirectoryError, NotADirectoryError, KeyError)


def _protocols(fs: Any) -> tuple[str, ...]:
    proto = fs.protocol
    return (proto,) if isinstance(proto, str) else tuple(proto)


def _missing_backend(url: str, exc: ImportError) -> HotsetError:
    scheme = url.split("://", 1)[0].split("::")[-1] if "://" in url else url
    hint = _HINTS.get(scheme, f"install the package that provides the fsspec protocol {scheme!r}")
    return HotsetError(f"cannot open {url!r}: {exc} (to fix: {hint})")


def _open_failed(url: str, exc: Exception) -> HotsetError:
    """Opening ``url`` failed in its back end (a host that does not resolve or refuses,
    a server error): named, instead of a bare ``socket.gaierror`` from deep inside."""
    reason = str(exc) or type(exc).__name__
    return HotsetError(f"cannot open {url!r}: {type(exc).__name__}: {reason}")


class FsspecStore:
    """Files under an fsspec URL; counts requests, bytes and wall seconds.

    ``storage_options`` go to the fsspec file system unchanged (credentials,
    endpoint URLs, anonymous access). ``create=True`` makes the root directory
    where the file system has directories; otherwise the root must already exist,
    so a typo in a path fails here rather than at the first read.

    ``read_many`` fetches a batch with one ``fs.cat`` call on asynchronous file
    systems (S3, GCS, HTTP): fsspec then issues the requests concurrently. On
    synchronous ones it is a loop, which is all ``cat`` would do there anyway.

    ``memory://`` is one file system per process, shared by every store that
    names it (handy in tests; give each its own root), and a forked DataLoader
    worker gets a copy, not a view.
    """

    def __init__(
        self,
        url: str,
        *,
        create: bool = False,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        from fsspec.core import url_to_fs

        self.url = url
        try:
            fs, root = url_to_fs(url, **dict(storage_options or {}))
        except ImportError as exc:
            raise _missing_backend(url, exc) from None
        except HotsetError:
            raise
        except Exception as exc:  # a back end that connects when made (ftp://: gaierror)
            raise _open_failed(url, exc) from None
        self.fs: Any = fs
        self._protocols = _protocols(fs)
        self._root = str(root).rstrip("/")
        self._prefix = self._root + "/"
        self._atomic_put = any(p in _ATOMIC_PUT for p in self._protocols)
        self._batch = bool(getattr(fs, "async_impl", False))
        try:
            if create:
                self.fs.makedirs(self._root or "/", exist_ok=True)
            elif self._root and not self.fs.isdir(self._root):
                raise HotsetError(
                    f"store root {url!r} is not a directory (pass create=True to make it)"
                )
        except HotsetError:
            raise
        except Exception as exc:  # the first request: an unreachable host, a refusal
            raise _open_failed(url, exc) from None
        self._stats = StatsCounter()

    @property
    def root(self) -> str:
        """The root as a path inside :attr:`fs` (protocol stripped)."""
        return self._root or "/"

    def _path(self, key: str) -> str:
        return self._prefix + check_key(key)

    def _missing(self, key: str) -> HotsetError:
        return HotsetError(f"no such key {key!r} in store {self.url!r}")

    def read(self, key: str) -> bytes:
        path = self._path(key)
        start = time.perf_counter()
        try:
            data = bytes(self.fs.cat_file(path))
        except _MISSING:
            raise self._missing(key) from None
        self._stats.add_read(len(data), time.perf_counter() - start)
        return data

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        """Bytes for each key in order; a repeated key is fetched (and counted) once."""
        paths = [self._path(k) for k in keys]
        unique = list(dict.fromkeys(paths))
        if not self._batch or len(unique) < 2 or any(_GLOB_CHARS & set(p) for p in unique):
            fetched = {p: self.read(p[len(self._prefix) :]) for p in unique}
            return [fetched[p] for p in paths]
        start = time.perf_counter()
        got = self.fs.cat(unique, on_error="return")
        fetched = {}
        for path in unique:
            value = got.get(path, FileNotFoundError(path))
            if isinstance(value, _MISSING):
                raise self._missing(path[len(self._prefix) :])
            if isinstance(value, BaseException):
                raise value
            fetched[path] = bytes(value)
        nbytes = sum(len(b) for b in fetched.values())
        self._stats.add_read(nbytes, time.perf_counter() - start, count=len(fetched))
        return [fetched[p] for p in paths]

    def range_requests(self, ranges: Sequence[Range]) -> int:
        """The requests :meth:`read_ranges` counts for ``ranges``: one per coalesced range."""
        return len(coalesce(ranges)) if ranges else 0

    def read_ranges(self, key: str, ranges: Sequence[Range]) -> list[bytes]:
        """Byte ranges of one file through ``fs.cat_ranges`` (concurrent on asynchronous
        file systems). Object stores answer one range per GET, so the ranges are
        coalesced (touching ones merged) and each coalesced range counts one request."""
        checked = check_ranges(key, ranges)
        if not checked:
            return []
        path = self._path(key)
        spans = coalesce(checked)
        start = time.perf_counter()
        try:
            got = self.fs.cat_ranges(
                [path] * len(spans), [o for o, _ in spans], [o + n for o, n in spans]
            )
        except _MISSING:
            raise self._missing(key) from None
        for value in got:
            if isinstance(value, _MISSING):
                raise self._missing(key)
            if isinstance(value, BaseException):
                raise value
        blobs = [bytes(b) for b in got]
        self._stats.add_read(sum(map(len, blobs)), time.perf_counter() - start, count=len(spans))
        out = []
        for offset, length in checked:
            i = _span_of(spans, offset)
            rel = offset - spans[i][0]
            out.append(blobs[i][rel : rel + length])
        return out

    def size(self, key: str) -> int:
        path = self._path(key)
        try:
            if not self.fs.isfile(path):
                raise self._missing(key)
            return int(self.fs.size(path))
        except _MISSING:
            raise self._missing(key) from None

    def exists(self, key: str) -> bool:
        return bool(self.fs.isfile(self._path(key)))

    def write(self, key: str, data: bytes) -> None:
        """Atomic where the file system allows: a temporary name, then a rename."""
        path = self._path(key)
        start = time.perf_counter()
        if self._atomic_put:
            self.fs.pipe_file(path, bytes(data))
        else:
            parent, _, name = path.rpartition("/")
            self.fs.makedirs(parent or "/", exist_ok=True)
            tmp = f"{parent}/.{name}.{uuid.uuid4().hex}.tmp"
            try:
                self.fs.pipe_file(tmp, bytes(data))
                self.fs.mv(tmp, path)
            except BaseException:
                if self.fs.exists(tmp):
                    self.fs.rm_file(tmp)
                raise
        self._stats.add_write(len(data), time.perf_counter() - start)

    def list_keys(self) -> Iterator[str]:
        """Keys of all files under the root, sorted; names starting with '.' are hidden."""
        found = self.fs.find(self._root or "/", withdirs=False)
        keys = []
        for raw in found:
            path = self.fs._strip_protocol(raw)
            if not path.startswith(self._prefix):
                continue
            key = path[len(self._prefix) :]
            if not key.rsplit("/", 1)[-1].startswith("."):
                keys.append(key)
        yield from sorted(keys)

    def stats(self) -> StoreStats:
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        self._stats.reset()

    def __repr__(self) -> str:
        return f"FsspecStore({self.url!r})"


def _span_of(spans: list[Range], offset: int) -> int:
    """Index of the coalesced span holding ``offset`` (spans sorted and disjoint)."""
    import bisect

    return max(0, bisect.bisect_right([o for o, _ in spans], offset) - 1)
