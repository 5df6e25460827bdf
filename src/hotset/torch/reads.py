"""Storage reads of a worker: checked against the manifest, inline or on I/O threads.

A batch's single-sample reads overlap each other on a bounded pool of
``io_threads`` threads (per process), so a slow store keeps several requests in
flight. A thread hop costs more than a read the page cache answers, though
(measured: 42 vs 15 us), so a :class:`~hotset.storage.local.LocalStore` is
read inline while most of its latest reads take at most
:data:`INLINE_READ_MAX_S` (a median: one stalled read changes nothing); when
they turn slow (a network mount, a cold disk) its reads go to the threads,
and after :data:`PROBE_EVERY` calls there one read is timed inline to look
again. Any other store (remote, or a throttled model of one) is always read on
the threads. Whole units (chunks) are one request each, always on the threads.

Every read is checked against the manifest's size (always) and xxh3 (with
``verify``, the loader's default); a unit against the layout's size and hash.
A file whose bytes do not match is an :class:`~hotset.errors.IntegrityError`
naming its key and id: unlike a poisoned cache entry (see
:mod:`hotset.torch.fetch`) there is no better copy to fall back on, so it is a
real data problem and training stops.

A unit's hash proves only that the file is the one ``chunks.json`` describes,
not that ``chunks.json`` still describes the data set (ids edited, or new data
of the same sizes copied over a packed directory: the chunks then hold the old
samples). So every sample cut from a unit is checked against the manifest too,
as a sample file would be (:meth:`StoreReader.split_read` for a unit read from
storage, :meth:`StoreReader.split_cached` for one the cache served). Measured
(2 cores; ``split_read`` over 64 chunks of 64 random samples, median of 15
runs, ``verify`` off vs on): +0.07 us per 780-byte sample (0.55 -> 0.62 us with
the cut), +0.13 us per 3.2 kB sample (0.78 -> 0.91 us) and +1.4 to 2.1 us per
100 kB sample (about 61 us, the cut's copy dominating); the unit's own xxh3
adds 0.014, 0.07 and 3-4 us per sample.

Cost of ``verify``, measured (``hotset.bench.overhead.loader_rows``, 2 cores):
xxh3 plus the compare takes about 0.1 us per sample on the bench's ~780-byte
files (93 ns timed directly, 45 of them the loop itself) and about 1.7 us on a
100 kB file; each sample is hashed once, whether it came from storage or the
cache. That is below the bench's noise: over 14 interleaved runs each, the
lru loader's median went from 37.4 to 36.8 us per sample and the cache-free
one's from 21.4 to 21.2 us (run to run they spread over 5 us). The size is
checked first, for free, and only bytes that fail pay for a message.
"""

from __future__ import annotations

import collections
import os
import struct
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import xxhash

from hotset.data.chunks import ChunkLayout, member_mismatch
from hotset.engine.packages import MAGIC as PACKAGE_MAGIC
from hotset.engine.packages import PackageFiles, header_bytes
from hotset.engine.packages import encode as encode_package
from hotset.engine.units import UnitLayout, member_ranges
from hotset.errors import HotsetError, IntegrityError
from hotset.storage.base import Store
from hotset.storage.local import LocalStore
from hotset.storage.ranges import range_requests, read_ranges

#: xxh3-64 as 16 lowercase hex digits: the manifest's ``xxh3`` column and a cache key's hash
xxh3_hex = xxhash.xxh3_64_hexdigest
#: ids read by one thread, and the future of their bytes (in the same order)
_Reads = tuple[list[int], Future[list[bytes | None]]]
#: a local store whose reads take longer than this on average (a network mount, a
#: cold disk) is read on the I/O threads, where reads overlap; see StoreReader.start
INLINE_READ_MAX_S = 100e-6
#: while reads go to the threads, every this many read calls one read is timed inline
PROBE_EVERY = 16
#: inline reads are judged by the median of the latest _WINDOW, every _JUDGE_EVERY reads
_WINDOW = 32
_JUDGE_EVERY = 8


class StoreReader:
    """Reads samples and units from one store for one process (threads made lazily)."""

    def __init__(
        self,
        *,
        store: Store,
        keys: Sequence[str],
        hashes: Sequence[str],
        sizes: list[int],
        layout: UnitLayout | None,
        io_threads: int,
        verify: bool,
        skip_errors: bool = False,
    ) -> None:
        self.store = store
        #: ``on_error="skip"``: a sample whose read fails for good (a StorageError
        #: after the retries, an IntegrityError) is left out of ``blobs`` and its
        #: error kept in :attr:`failed`, instead of failing the whole batch
        self.skip_errors = skip_errors
        #: id -> error message of the reads skipped since :meth:`take_failed`
        self.failed: dict[int, str] = {}
        self.keys = keys
        self.hashes = hashes
        self._size_list = sizes
        self.layout = layout
        self.io_threads = io_threads
        self.verify = verify
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = -1
        #: reads may be made inline (see the module docstring): a store on this machine
        self._inline_capable = _on_this_machine(store)
        self._recent: collections.deque[float] = collections.deque(maxlen=_WINDOW)
        self._pool_calls = 0  # read calls left on the threads before one is timed inline
        #: the batch's packages' members (``plan.unit_members``), set per batch
        self.unit_members: dict[int, Any] = {}
        #: packages made again from their members (file gone or unreadable), since the
        #: last take_package_counts; their member reads and bytes; why each
        self.packages_lost = self.package_member_reads = self.package_member_bytes = 0
        self.lost_reason = ""
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_pool"] = None  # threads never cross a process boundary
        state["_pool_pid"] = -1
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool = ThreadPoolExecutor(self.io_threads, thread_name_prefix="hotset-io")
            self._pool_pid = os.getpid()
        return self._pool

    def close(self) -> None:
        if self._pool is not None and self._pool_pid == os.getpid():
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None

    def read_checked(self, sid: int) -> bytes:
        """One storage read of ``sid``, checked against the manifest (read-ahead uses it too)."""
        data = self.store.read(self.keys[sid])
        if len(data) != self._size_list[sid] or (
            self.verify and xxh3_hex(data) != self.hashes[sid]
        ):
            self._check(sid, data)
        return data

    def _check(self, sid: int, data: bytes) -> None:
        """Raise unless ``data`` has the manifest's size (and, with ``verify``, its hash).

        The hot loops test size and hash inline and call this only for bytes that
        fail, so the message is built (and the hash taken twice) only on the error path.
        """
        where = f"{self.keys[sid]!r} (id {sid})"
        self._check_bytes(where, data, self._size_list[sid], self.hashes[sid], "the manifest")

    def read_unit(self, unit: int) -> bytes:
        """One storage request for a whole unit, checked against the layout.

        Only the unit as a whole is checked here (a chunk's size and xxh3 against
        ``chunks.json``); its members are checked against the manifest where it is
        cut (:meth:`split_read`), once, whichever process read it.
        """
        layout = self.layout
        if layout is None:
            raise HotsetError(f"plan reads unit {unit}, but the dataset has no chunk layout")
        key = layout.chunk_keys[unit]
        if isinstance(layout, PackageFiles):  # describes itself: its members are checked
            return self._read_package(layout, unit, key)
        # a pack the loader made lies in a store of its own (hotset.data.packdir)
        data = (getattr(layout, "store", None) or self.store).read(key)
        want, digest = int(layout.chunk_sizes[unit]), layout.chunk_hashes[unit]
        if self.verify or len(data) != want:
            try:
                self._check_bytes(f"{key!r} (unit {unit})", data, want, digest, "the layout")
            except IntegrityError as exc:
                if not isinstance(layout, ChunkLayout):
                    raise
                raise IntegrityError(f"{exc}; {layout.repack_advice()}") from None
        return data

    def _read_package(self, layout: PackageFiles, unit: int, key: str) -> bytes:
        """A package file's bytes; one that is gone, unreadable or malformed is made again
        from its members, each read alone from the data store (see the module).

        Packages are the loader's own files, written while it trains and deleted once
        read: one another process deleted (a clean-up job, a full disk's remedy), or
        that did not survive, used to stop iCACHE and ImPACT. The batch's plan names the
        members (``unit_members``); re-encoded in that order they give the bytes the
        writer wrote, so what follows (the split, the member checks, a put of the whole
        package) is unchanged. Without the members (a plan made before they were
        attached) the error is raised as before.
        """
        members = self.unit_members.get(unit)
        try:
            data = (layout.store or self.store).read(key)
            if members is None or _package_intact(data, members, self._size_list):
                return data
            why = "its contents are not the package's members"
        except (HotsetError, OSError) as exc:
            if members is None:
                raise
            why = str(exc)
        parts = [(sid, self.read_checked(sid)) for sid in members.tolist()]
        with self._lock:
            self.packages_lost += 1
            self.package_member_reads += len(parts)
            self.package_member_bytes += sum(len(b) for _, b in parts)
            self.lost_reason = self.lost_reason or f"{key!r}: {why}"[:300]
        return encode_package(parts)

    def take_package_counts(self) -> dict[str, Any]:
        """Packages made again from their members since the last call, their member reads
        and bytes, and why the first was (the batch's ``info``; hotset.torch.movebytes)."""
        with self._lock:
            out = {
                "packages_lost": self.packages_lost,
                "package_member_reads": self.package_member_reads,
                "package_member_bytes": self.package_member_bytes,
                "package_lost_reason": self.lost_reason,
            }
            self.packages_lost = self.package_member_reads = self.package_member_bytes = 0
            self.lost_reason = ""
        return out

    def split_read(self, unit: int, data: bytes) -> tuple[dict[int, bytes], bool]:
        """A unit read from storage, cut into samples each checked against the manifest.

        Returns (its samples, whether all of them passed). A member that fails
        (its size always, its xxh3 with ``verify``) is an :class:`IntegrityError`
        naming the unit's key and the sample's id: storage holds no better copy,
        so, as for a bad sample file, training stops. In skip mode it is left
        out and kept in :attr:`failed` instead (a unit that cannot be cut at
        all fails each of its members), and the other members are kept.
        """
        try:
            parts, bad = self._cut(unit, data)
        except HotsetError as exc:
            if not self.skip_errors:
                raise
            assert self.layout is not None
            for sid in self.layout.members(unit).tolist():
                self.failed[sid] = str(exc)
            return {}, False
        if not bad:
            return parts, True
        if not self.skip_errors:
            raise IntegrityError(self._member_error(unit, bad[0], parts.get(bad[0])))
        for sid in bad:
            self.failed[sid] = self._member_error(unit, sid, parts.pop(sid, None))
        return parts, False

    def split_cached(self, unit: int, data: bytes) -> dict[int, bytes] | None:
        """A unit the cache served, cut into samples; None if any fails the manifest.

        Such an entry is poisoned (other bytes stored under the unit's key, or a
        unit put from a chunk set that no longer fits the manifest) and the
        caller reads the unit again from storage, as for a poisoned sample.
        """
        try:
            parts, bad = self._cut(unit, data)
        except HotsetError:
            return None
        return None if bad else parts

    def _cut(self, unit: int, data: bytes) -> tuple[dict[int, bytes], list[int]]:
        """``unit``'s samples and the ids among them the manifest disowns (see the module)."""
        layout = self.layout
        assert layout is not None
        parts = layout.split(unit, data)
        sizes, hashes, n = self._size_list, self.hashes, len(self._size_list)
        if self.verify:
            bad = [
                sid
                for sid, blob in parts.items()
                if not 0 <= sid < n or len(blob) != sizes[sid] or xxh3_hex(blob) != hashes[sid]
            ]
        else:
            bad = [
                sid for sid, blob in parts.items() if not 0 <= sid < n or len(blob) != sizes[sid]
            ]
        return parts, bad

    def _member_error(self, unit: int, sid: int, blob: bytes | None) -> str:
        """Why member ``sid`` of ``unit`` was refused: named by the unit's key and the id."""
        layout = self.layout
        assert layout is not None
        if isinstance(layout, ChunkLayout):
            return member_mismatch(layout, unit, sid, self.keys)
        where = f"{layout.chunk_keys[unit]!r} (unit {unit})"
        if not 0 <= sid < len(self._size_list):
            return f"{where}: member {sid} is not an id of this data set (0..{len(self.keys) - 1})"
        got = "nothing" if blob is None else f"{len(blob)} bytes with xxh3 {xxh3_hex(blob)}"
        return (
            f"{where}: sample {sid} ({self.keys[sid]!r}) is {got}, the manifest says "
            f"{self._size_list[sid]} bytes with xxh3 {self.hashes[sid]}"
        )

    def _check_bytes(self, where: str, data: bytes, size: int, digest: str, source: str) -> None:
        if len(data) != size:
            raise IntegrityError(
                f"{where}: the store returned {len(data)} bytes, {source} says {size}"
            )
        if self.verify:
            got = xxh3_hex(data)
            if got != digest:
                hint = ""
                if _user_items(self.store):
                    hint = (
                        ": __getitem__ returned other bytes for the same index than when the "
                        "data set was measured (random augmentation? move it to transform=, "
                        "which runs after the cache)"
                    )
                raise IntegrityError(
                    f"{where}: stored bytes hash to {got}, {source} says {digest}{hint}"
                )

    def read_group(self, unit: int, sids: list[int]) -> list[bytes | None]:
        """A partial unit read: ``sids``' byte ranges of ``unit``'s file in ONE request.

        Each sample is checked against the manifest (size always, xxh3 with
        ``verify``) exactly as a sample read alone is, so a chunk file that no
        longer matches the manifest stops training here too (or, in skip mode,
        each failed id is None with its error in :attr:`failed`).
        """
        layout = self.layout
        if layout is None:
            raise HotsetError(f"plan reads part of unit {unit}, but the dataset has no layout")
        key = layout.chunk_keys[unit]
        store = getattr(layout, "store", None) or self.store
        try:
            parts = read_ranges(store, key, member_ranges(layout, unit, sids))
        except HotsetError as exc:
            if not self.skip_errors:
                raise
            for sid in sids:
                self.failed[sid] = str(exc)
            return [None] * len(sids)
        sizes, hashes, verify = self._size_list, self.hashes, self.verify
        out: list[bytes | None] = []
        for sid, data in zip(sids, parts, strict=True):
            if len(data) != sizes[sid] or (verify and xxh3_hex(data) != hashes[sid]):
                where = f"{key!r} (unit {unit}, id {sid}, {self.keys[sid]!r})"
                try:
                    self._check_bytes(where, data, sizes[sid], hashes[sid], "the manifest")
                except IntegrityError as exc:
                    if not self.skip_errors:
                        raise
                    self.failed[sid] = str(exc)
                    out.append(None)
                    continue
            out.append(data)
        return out

    def group_requests(self, groups: dict[int, list[int]]) -> int:
        """The storage requests these partial unit reads make: one each, except on an
        object store, which answers one byte range per GET and so makes one request per
        contiguous run of members (:func:`~hotset.storage.ranges.range_requests`)."""
        layout = self.layout
        if layout is None:
            return len(groups)
        store = getattr(layout, "store", None) or self.store
        if not _counts_runs(store):
            return len(groups)
        return sum(range_requests(store, member_ranges(layout, u, s)) for u, s in groups.items())

    def submit_groups(self, groups: dict[int, list[int]]) -> list[_Reads]:
        """Partial unit reads on the I/O threads: one request (and one task) per unit."""
        pool = self.pool()
        return [(sids, pool.submit(self.read_group, u, sids)) for u, sids in groups.items() if sids]

    def submit_unit(self, unit: int) -> Future[bytes]:
        """Read a whole unit on the I/O threads (one request)."""
        return self.pool().submit(self.read_unit, unit)

    def _submit(self, sids: list[int]) -> list[_Reads]:
        """Read ``sids`` on up to ``io_threads`` threads, each taking every n-th id.

        One task per thread rather than per id: the requests still overlap
        ``io_threads`` at a time, without a future (and a lock round trip) per sample.
        """
        if not sids:
            return []
        pool = self.pool()
        lanes = min(self.io_threads, len(sids))
        return [
            (chunk, pool.submit(self._read_chunk, chunk))
            for chunk in (sids[i::lanes] for i in range(lanes))
        ]

    def _read_chunk(self, sids: list[int]) -> list[bytes | None]:
        if self.skip_errors:
            return [self._read_or_skip(sid) for sid in sids]
        read, keys, sizes, verify = self.store.read, self.keys, self._size_list, self.verify
        hashes = self.hashes
        out: list[bytes | None] = []
        for sid in sids:
            data = read(keys[sid])
            if len(data) != sizes[sid] or (verify and xxh3_hex(data) != hashes[sid]):
                self._check(sid, data)
            out.append(data)
        return out

    def _read_or_skip(self, sid: int) -> bytes | None:
        """``read_checked(sid)``, or None with the error kept in :attr:`failed` (skip mode)."""
        try:
            return self.read_checked(sid)
        except HotsetError as exc:  # StorageError, IntegrityError: failed for good
            self.failed[sid] = str(exc)
            return None

    def take_failed(self) -> dict[int, str]:
        """The reads skipped since the last call (skip mode), and forget them."""
        failed, self.failed = self.failed, {}
        return failed

    def _read_inline(self, sids: list[int], blobs: dict[int, bytes]) -> int:
        """Read ``sids`` in order, in this thread, until the reads prove slow; how many were read."""
        read, keys, sizes, verify = self.store.read, self.keys, self._size_list, self.verify
        hashes = self.hashes
        recent = self._recent
        clock = time.perf_counter
        done = 0
        skip = self.skip_errors
        t = clock()
        for sid in sids:
            if skip:
                got = self._read_or_skip(sid)
                if got is not None:
                    blobs[sid] = got
            else:
                data = read(keys[sid])
                if len(data) != sizes[sid] or (verify and xxh3_hex(data) != hashes[sid]):
                    self._check(sid, data)
                blobs[sid] = data
            now = clock()
            recent.append(now - t)
            t = now
            done += 1
            if not done % _JUDGE_EVERY and self._reads_slow():
                break
        return done

    def _reads_slow(self) -> bool:
        """Whether most of the latest inline reads (at least a few) took over the limit."""
        recent = self._recent
        if len(recent) < _JUDGE_EVERY:
            return False
        slow = sum([t > INLINE_READ_MAX_S for t in recent])
        return slow > len(recent) // 2

    def start(self, sids: list[int], blobs: dict[int, bytes]) -> list[_Reads]:
        """Read ``sids``: inline into ``blobs`` where that is cheaper, else on the I/O threads.

        A thread hop costs more than a read the page cache answers, so a local
        store is read inline while most of its latest reads take at most
        :data:`INLINE_READ_MAX_S` (a median: one stalled read changes nothing).
        Slower reads (a network mount, a cold disk) go to the threads, where
        they overlap; after :data:`PROBE_EVERY` calls there, one read is timed
        inline to look again. Any other store (remote, or a throttled model of
        one) is always read on the threads.
        """
        if not sids:
            return []
        if not self._inline_capable:
            return self._submit(sids)
        done = 0
        if self._pool_calls > 0:
            self._pool_calls -= 1
            if self._pool_calls:
                return self._submit(sids)
            self._recent.clear()  # the probe: one read, timed inline
            done = self._read_inline(sids[:1], blobs)
            if self._recent[-1] > INLINE_READ_MAX_S:
                self._pool_calls = PROBE_EVERY
                return self._submit(sids[done:])
        done += self._read_inline(sids[done:], blobs)
        if self._reads_slow():
            self._recent.clear()
            self._pool_calls = PROBE_EVERY
        return self._submit(sids[done:])

    @staticmethod
    def collect(reads: list[_Reads], blobs: dict[int, bytes]) -> None:
        for chunk, fut in reads:
            for sid, data in zip(chunk, fut.result(), strict=True):
                if data is not None:  # None: skipped (skip mode), its error in ``failed``
                    blobs[sid] = data

    def unit_or_skip(self, unit: int, fut: Future[bytes]) -> bytes | None:
        """A unit read's bytes; in skip mode None if it failed, each member marked failed."""
        if not self.skip_errors:
            return fut.result()
        try:
            return fut.result()
        except HotsetError as exc:
            assert self.layout is not None
            for sid in self.layout.members(unit).tolist():
                self.failed[sid] = str(exc)
            return None


def _package_intact(data: bytes, members: Any, sizes: list[int]) -> bool:
    """Whether ``data`` is a package of exactly ``members``, in order, each of its
    manifest size (its header read only: the members' bytes are checked when cut)."""
    count = len(members)
    if not data.startswith(PACKAGE_MAGIC) or len(data) < header_bytes(count):
        return False
    if struct.unpack_from("<I", data, len(PACKAGE_MAGIC))[0] != count:
        return False
    at, total = len(PACKAGE_MAGIC) + 4, header_bytes(count)
    for i, sid in enumerate(members.tolist()):
        got, length = struct.unpack_from("<QQ", data, at + 16 * i)
        if got != sid or not 0 <= sid < len(sizes) or length != sizes[sid]:
            return False
        total += length
    return total == len(data)


def _user_items(store: Store) -> bool:
    """Whether ``store`` (behind retries) encodes a user's Dataset items."""
    from hotset.storage.retry import RetryingStore
    from hotset.torch.user import ItemStore

    while isinstance(store, RetryingStore):
        store = store.inner
    return isinstance(store, ItemStore) and store.encodes_items


def _counts_runs(store: object) -> bool:
    """Whether ``store`` (behind retries) counts a ranged read's requests itself."""
    from hotset.storage.retry import RetryingStore

    while isinstance(store, RetryingStore):
        store = store.inner
    return hasattr(store, "range_requests")


def _on_this_machine(store: Store) -> bool:
    """A local store, alone or behind retries: a read the page cache may answer in microseconds.

    Throttled wrappers model a remote server and are not unwrapped: their reads
    must overlap on the threads.
    """
    from hotset.storage.retry import RetryingStore

    while isinstance(store, RetryingStore):
        store = store.inner
    return isinstance(store, LocalStore)
