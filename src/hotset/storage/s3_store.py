"""Objects under ``s3://bucket/prefix`` as a store: every request one GET, counted as one.

Why a store of its own rather than fsspec's s3fs: users judge hotset by the
requests and bytes it costs their object store, so a request counted here must
be a request the server saw. With boto3 each ``get_object`` call is exactly one
HTTP request with at most one ``Range``; s3fs reads through a buffered file
object (block cache, read-ahead) and may merge or split what it was asked for.
:mod:`hotset.storage.s3_client` says where the credentials and the endpoint
come from (boto3's standard chain only), which errors are retried and how
messages stay free of secrets.

Requests, as counted in :meth:`stats` (and by the loader, see
:func:`hotset.storage.ranges.range_requests`):

* :meth:`read`: one GET of the whole object;
* :meth:`read_ranges`: S3 answers one byte range per GET (a ``Range`` header
  naming several is answered with the whole object, by AWS and by SeaweedFS
  alike), so the ranges are coalesced (touching ones merged) and each coalesced
  range is one GET: :meth:`range_requests` says how many before any is made.
  The GETs of one call go one after another; the loader overlaps calls on its
  I/O threads;
* :meth:`read_many`: one GET per distinct key, up to ``max_connections`` at once;
* :meth:`size` and :meth:`exists` (a HEAD), :meth:`write` (a PUT), listing and
  deleting are not reads and are not counted as reads.

A range past the end of an object returns fewer bytes, or none (the server's
416), as ``pread`` does; a server that ignores ``Range`` and sends the whole
object is sliced here, and counted with the bytes it really sent.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hotset.errors import HotsetError
from hotset.storage.base import StatsCounter, StoreStats, check_key
from hotset.storage.ranges import Range, check_ranges, coalesce
from hotset.storage.s3_client import (
    ClientOptions,
    S3TransientError,
    endpoint_of,
    make_client,
    parse_s3_url,
    translate,
)

__all__ = ["S3Store"]


def _positive(name: str, value: object, kind: type) -> Any:
    """``value`` if it is a ``kind`` (int, or any real number for float) above 0."""
    number = int | float if kind is float else int
    if isinstance(value, bool) or not isinstance(value, number) or not value > 0:
        what = "an integer" if kind is int else "a number"
        raise HotsetError(f"{name}: must be {what} > 0, got {value!r}")
    return value


class S3Store:
    """Objects under ``s3://bucket/prefix``; keys are relative to the prefix.

    ``create=True`` creates the bucket when it does not exist (a prefix needs no
    creating); otherwise the bucket must exist, so a typo fails here with the
    bucket's name. ``profile``, ``endpoint_url`` and ``region`` override what
    the environment says; ``max_connections`` bounds the client's connection
    pool (and :meth:`read_many`'s concurrency); the timeouts bound connecting
    and each read of a response. Names whose last part starts with ``.`` are
    not listed (temporaries, as in a local store), nor are "folder" markers.
    """

    def __init__(
        self,
        url: str,
        *,
        create: bool = False,
        profile: str | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        max_connections: int = 32,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 60.0,
        addressing_style: str | None = None,
    ) -> None:
        self.bucket, self.prefix = parse_s3_url(url)
        self.url = f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        for name, value in (("profile", profile), ("endpoint_url", endpoint_url)):
            if value is not None and not isinstance(value, str):
                raise HotsetError(f"{name}: expected a string, got {type(value).__name__}")
        if addressing_style not in (None, "auto", "path", "virtual"):
            raise HotsetError(
                f"addressing_style: one of auto, path, virtual, got {addressing_style!r}"
            )
        self.options = ClientOptions(
            profile=profile,
            endpoint_url=endpoint_url,
            region=region,
            max_connections=_positive("max_connections", max_connections, int),
            connect_timeout_s=_positive("connect_timeout_s", connect_timeout_s, float),
            read_timeout_s=_positive("read_timeout_s", read_timeout_s, float),
            addressing_style=addressing_style,
        )
        self._stats = StatsCounter()
        self._setup()
        self._check_bucket(create)

    # -- per-process state: a client made lazily, never pickled --------------

    def _setup(self) -> None:
        self._lock = threading.Lock()
        self._client_obj: Any = None
        self._pid = os.getpid()

    def __getstate__(self) -> dict[str, Any]:
        return {"bucket": self.bucket, "prefix": self.prefix, "url": self.url,
                "options": self.options, "_stats": self._stats}  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()

    def _client(self) -> Any:
        """This process's client (a forked worker makes its own: sockets do not cross a fork)."""
        client = self._client_obj
        if client is not None and self._pid == os.getpid():
            return client
        with self._lock:
            if self._client_obj is None or self._pid != os.getpid():
                self._client_obj = make_client(self.options)
                self._pid = os.getpid()
            return self._client_obj

    def _fail(self, exc: BaseException, what: str, key: str | None) -> BaseException:
        where = f"s3://{self.bucket}/{self.prefix}{key}" if key is not None else self.url
        return translate(exc, client=self._client(), what=what, where=where)

    def _check_bucket(self, create: bool) -> None:
        """The bucket exists (or is made, with ``create``): a typo fails at open, named."""
        client = self._client()
        try:
            client.head_bucket(Bucket=self.bucket)
            return
        except Exception as exc:  # unreachable, refused, absent: a store that cannot open
            if _status(exc) != 404:
                raise HotsetError(str(self._fail(exc, "opening", None))) from None
            if not create:
                raise HotsetError(
                    f"no bucket {self.bucket!r} at {endpoint_of(client)} (for {self.url!r}; "
                    "create=True makes it)"
                ) from None
        try:
            client.create_bucket(Bucket=self.bucket)
        except Exception as exc:
            raise HotsetError(str(self._fail(exc, "creating the bucket of", None))) from None

    # -- reads ---------------------------------------------------------------

    def _object(self, key: str) -> str:
        return self.prefix + check_key(key)

    def _get(self, key: str, byte_range: str | None) -> tuple[bytes, bool]:
        """One GET: (its body, whether the server honoured the range)."""
        args = {"Bucket": self.bucket, "Key": self._object(key)}
        if byte_range is not None:
            args["Range"] = byte_range
        try:
            response = self._client().get_object(**args)
            body = response["Body"]
            try:
                data = body.read()
            finally:
                body.close()
        except Exception as exc:
            error = self._fail(exc, "reading", key)
            if _status(exc) == 416:  # the range starts past the end: nothing there
                return b"", True
            if isinstance(error, HotsetError) and _status(exc) == 404:
                raise HotsetError(f"no such key {key!r} in store {self.url!r}") from None
            raise error from None
        expected = response.get("ContentLength")
        if expected is not None and len(data) != int(expected):
            raise S3TransientError(
                f"reading s3://{self.bucket}/{self._object(key)}: the response ended after "
                f"{len(data)} of {expected} bytes"
            )
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return bytes(data), status == 206

    def read(self, key: str) -> bytes:
        start = time.perf_counter()
        data, _ = self._get(key, None)
        self._stats.add_read(len(data), time.perf_counter() - start)
        return data

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        """Bytes for each key in order; a repeated key is fetched (and counted) once."""
        unique = list(dict.fromkeys(keys))
        if len(unique) < 2:
            return [self.read(k) for k in keys]
        workers = min(len(unique), self.options.max_connections, 16)
        with ThreadPoolExecutor(workers, thread_name_prefix="hotset-s3") as pool:
            fetched = dict(zip(unique, pool.map(self.read, unique), strict=True))
        return [fetched[k] for k in keys]

    def range_requests(self, ranges: Sequence[Range]) -> int:
        """The GETs :meth:`read_ranges` makes for ``ranges``: one per coalesced range."""
        return sum(1 for _, length in coalesce(ranges) if length > 0)

    def read_ranges(self, key: str, ranges: Sequence[Range]) -> list[bytes]:
        """Byte ranges of one object: one ranged GET per coalesced range (see the module)."""
        checked = check_ranges(key, ranges)
        start = time.perf_counter()
        got: dict[int, bytes] = {}  # span offset -> its bytes
        whole: bytes | None = None
        requests = moved = 0
        for offset, length in coalesce(checked):
            if length == 0:
                continue
            if whole is not None:  # the server sent the whole object already
                got[offset] = whole[offset : offset + length]
                continue
            data, ranged = self._get(key, f"bytes={offset}-{offset + length - 1}")
            requests += 1
            moved += len(data)
            if ranged:
                got[offset] = data
            else:
                whole = data
                got[offset] = data[offset : offset + length]
        self._stats.add_read(moved, time.perf_counter() - start, count=requests)
        return [_cut(got, offset, length) for offset, length in checked]

    # -- metadata, writes, listing --------------------------------------------

    def _head(self, key: str) -> dict[str, Any] | None:
        try:
            head: dict[str, Any] = self._client().head_object(
                Bucket=self.bucket, Key=self._object(key)
            )
            return head
        except Exception as exc:
            if _status(exc) == 404:
                return None
            raise self._fail(exc, "checking", key) from None

    def size(self, key: str) -> int:
        head = self._head(key)
        if head is None:
            raise HotsetError(f"no such key {key!r} in store {self.url!r}")
        return int(head["ContentLength"])

    def exists(self, key: str) -> bool:
        return self._head(key) is not None

    def write(self, key: str, data: bytes) -> None:
        """One PUT: atomic on S3 (readers see the old object or the new one, never half)."""
        start = time.perf_counter()
        try:
            self._client().put_object(Bucket=self.bucket, Key=self._object(key), Body=bytes(data))
        except Exception as exc:
            raise self._fail(exc, "writing", key) from None
        self._stats.add_write(len(data), time.perf_counter() - start)

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error when it is already gone, as S3 answers)."""
        try:
            self._client().delete_object(Bucket=self.bucket, Key=self._object(key))
        except Exception as exc:
            raise self._fail(exc, "deleting", key) from None

    def list_keys(self, under: str = "") -> Iterator[str]:
        """Keys of the objects under the prefix (``under`` narrows it: ``"chunks/"``), sorted."""
        keys = []
        pages = self._client().get_paginator("list_objects_v2")
        try:
            for page in pages.paginate(Bucket=self.bucket, Prefix=self.prefix + under):
                for item in page.get("Contents", []):
                    key = str(item["Key"])[len(self.prefix) :]
                    if _listable(key):
                        keys.append(key)
        except Exception as exc:
            raise self._fail(exc, "listing", under or None) from None
        yield from sorted(keys)

    def stats(self) -> StoreStats:
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        self._stats.reset()

    def __repr__(self) -> str:
        return f"S3Store({self.url!r})"


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(status) if status is not None else None


def _listable(key: str) -> bool:
    """A key a store reads: canonical, not a folder marker, not hidden."""
    if not key or key.endswith("/") or key.rsplit("/", 1)[-1].startswith("."):
        return False
    try:
        check_key(key)
    except HotsetError:
        return False
    return True


def _cut(got: dict[int, bytes], offset: int, length: int) -> bytes:
    """Range (offset, length) out of the coalesced span holding it."""
    if length == 0:
        return b""
    span = max(o for o in got if o <= offset)
    rel = offset - span
    return got[span][rel : rel + length]
