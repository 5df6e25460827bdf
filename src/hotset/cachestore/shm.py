"""The embedded default cache: one shared-memory segment every DataLoader worker maps.

No server, no copies between processes: the owner (the main process) creates a
``multiprocessing.shared_memory.SharedMemory`` segment; a worker gets the cache
either by fork (it inherits the mapping) or by pickling (spawn: the pickle
carries only the segment name and the child attaches). Workers come and go
between epochs; the segment outlives them and is unlinked by its owner at
:meth:`SharedMemoryCache.close`, at garbage collection or at interpreter exit.

Crashes. The owner also unlinks on SIGTERM: creating an owning cache in the
main thread installs a SIGTERM handler that raises ``SystemExit(143)`` (so
``finally`` blocks, ``atexit`` and the finalizers run), but only where SIGTERM
still has its default action; a handler the application (or a framework such
as Lightning) installed is left alone, and then cleanup is up to that handler
exiting normally. A forked child that inherits the handler restores the default
action and dies of the signal as before. What no handler survives (SIGKILL of
the whole process group, as Slurm, docker and ``timeout`` send) is reclaimed
later: segments are named ``hotset_<pid>_<start>_<pidns>_<token>`` and carry
the same owner identity in header words 10-12, and every new owning cache
first unlinks the ``hotset_*`` segments whose owner is dead
(:func:`hotset.cachestore.shm_gc.reclaim_stale_segments`; ``hotset cache gc``
does the same by hand).

Layout of the segment (all integers little-endian u64)::

    header   128 bytes   magic "HOTSHM01", version, n_slots, capacity, arena size,
                         free-table capacity, used bytes, free extents, writer pid,
                         live entries, owner pid, owner start time, owner pid namespace
    slots    32 B x n_slots          per sample id: seq, offset, size + 1 (0 = empty), hash
    free     16 B x free_cap         free extents of the arena, sorted by offset
    arena    capacity x (1 + slack)  payload bytes, unaligned, never re-encoded

The index overhead is therefore ``128 + 32 * n_slots + 16 * free_cap`` bytes with
``free_cap = min(n_slots + 1, 65536)`` (about 33 MB for a million samples) and is
*not* counted in ``capacity_bytes``, which bounds payload bytes only. The arena
is ``capacity_bytes * (1 + arena_slack)``: the slack is room against
fragmentation (tmpfs pages cost memory only once touched, and the payload in the
arena never exceeds ``capacity_bytes``).

Concurrency. Writers (puts, deletes, clear) take a POSIX record lock on the
segment, so one process writes at a time; record locks belong to a process, are
not inherited by fork, and are released by the kernel when a process dies, so a
worker killed mid-write cannot deadlock the others. A header field names the
writer in progress; the next writer that finds it set repairs the index
(invalidates the torn slot and rebuilds the free table from the slots). Readers
take no lock: each slot carries a sequence counter that a writer makes odd
before touching the slot or its bytes and even afterwards, and a reader copies
the bytes and retries if the counter moved (a seqlock). With ``verify=True``
every get also re-hashes the bytes and raises
:class:`~hotset.errors.IntegrityError` on a mismatch (any handle on the segment
can write it, with or without ``verify``). The loader opens its cache without
``verify`` and checks hits itself (:mod:`hotset.torch.fetch`), so that a bad
entry is dropped and re-read instead of failing a whole ``get_many``.

Reads, cost. ``get_many`` makes one pass over the batch: each key is validated
once, its hash compared as an integer with the one in its slot (hashing the
bytes only with ``verify``), and a hit is one copy, from the segment straight
into the ``bytes`` returned, between the two reads of the counter. A miss (empty
slot, other content, or an extent reaching past the arena, which no writer
makes) is answered on the first look: serving nothing is always safe, so it
needs no second read of the counter. Only a slot a writer holds takes the
retrying path. For samples of ~100 kB nearly all the time of a hit is then the
first touch of the freshly allocated result (page faults where the allocator
has handed a freed batch back to the kernel), not this bookkeeping.

Allocation is first fit over the free-extent table with coalescing on free.
When no extent fits a put that the budget allows (fragmentation), or the table
is full, the arena is compacted: live entries slide down, each under its own
seqlock, leaving one free extent at the end. The budget check guarantees the
tail then fits.

Stats are per handle: each process counts what it did.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import re
import secrets
import signal
import struct
import sys
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from multiprocessing import shared_memory
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from hotset.cachestore.base import (
    CacheKey,
    CacheStats,
    CacheStatsCounter,
    check_cache_key,
    check_payload,
    refuse_over_budget,
)
from hotset.cachestore.shm_gc import (
    HEADER_MAGIC,
    HEADER_OWNER_WORD,
    owner_identity,
    reclaim_stale_segments,
    segment_name,
)
from hotset.errors import HotsetError, IntegrityError
from hotset.units import parse_bytes

__all__ = ["DEFAULT_ARENA_SLACK", "SharedMemoryCache", "index_overhead_bytes"]

_MAGIC = HEADER_MAGIC
_VERSION = 1
_HEADER_BYTES = 128
_SLOT_BYTES = 32
_EXTENT_BYTES = 16
# Header fields, as indexes into the header viewed as u64.
_H_VERSION, _H_N_SLOTS, _H_CAPACITY, _H_ARENA, _H_FREE_CAP = 1, 2, 3, 4, 5
_H_USED, _H_N_FREE, _H_WRITER, _H_LIVE = 6, 7, 8, 9
# Who created the segment (pid, /proc start time, pid-namespace inode), for shm_gc.
# Words a version-1 reader ignores, so the layout version did not change.
_H_OWNER_PID, _H_OWNER_START, _H_OWNER_NS = 10, 11, 12
assert HEADER_OWNER_WORD == _H_OWNER_PID
# Slot fields.
_S_SEQ, _S_OFF, _S_LEN1, _S_HASH = 0, 1, 2, 3

_MAX_FREE_EXTENTS = 1 << 16
DEFAULT_ARENA_SLACK = 0.25
_READ_GIVE_UP_SECONDS = 0.5
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")

_SLOT = struct.Struct("<4Q")
_U64 = struct.Struct("<Q")

U64Array = npt.NDArray[np.uint64]


def index_overhead_bytes(n_slots: int) -> int:
    """Bytes the segment spends on header, slot table and free table (not payload)."""
    return _HEADER_BYTES + _SLOT_BYTES * n_slots + _EXTENT_BYTES * _free_cap(n_slots)


def _free_cap(n_slots: int) -> int:
    # Free extents never outnumber live entries + 1, so n_slots + 1 can never
    # overflow; past the cap an overflow triggers compaction instead.
    return max(1, min(n_slots + 1, _MAX_FREE_EXTENTS))


def _align(n: int, to: int = 64) -> int:
    return (n + to - 1) // to * to


# One writer at a time *within* a process too: record locks do not exclude
# threads of the same process (or two handles in one process).
_PROCESS_LOCKS: dict[str, threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


def _process_lock(name: str) -> threading.Lock:
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(name, threading.Lock())


def _reset_process_locks_after_fork() -> None:
    # A lock held by another thread at fork time would never be released in the child.
    global _PROCESS_LOCKS_GUARD
    _PROCESS_LOCKS_GUARD = threading.Lock()
    _PROCESS_LOCKS.clear()


os.register_at_fork(after_in_child=_reset_process_locks_after_fork)


_SIGTERM_HANDLER_PID = 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM -> SystemExit in the process that installed it, so exit cleanup runs.

    A forked child (a DataLoader worker) inherits Python-level handlers; there
    the default action is restored and the signal re-sent, so workers still die
    of SIGTERM exactly as they would without hotset.
    """
    if os.getpid() != _SIGTERM_HANDLER_PID:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise SystemExit(128 + signum)


def _install_sigterm_cleanup() -> None:
    """Make SIGTERM unwind the owner so its segments are unlinked (see module docstring).

    Only from the main thread (Python's rule for handlers) and only over the
    default action: a handler someone else installed, or SIG_IGN, is theirs.
    """
    global _SIGTERM_HANDLER_PID
    if os.getpid() == _SIGTERM_HANDLER_PID:
        return
    if threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(ValueError, OSError):
        current = signal.getsignal(signal.SIGTERM)
        if current is _exit_on_sigterm:
            # Inherited by fork from an owner: this process now owns a cache itself.
            _SIGTERM_HANDLER_PID = os.getpid()
        elif current is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
            _SIGTERM_HANDLER_PID = os.getpid()


def _attach_segment(name: str) -> shared_memory.SharedMemory:
    """Open an existing segment without letting this process's exit destroy it.

    Before Python 3.13 attaching registers the segment with the resource
    tracker, and a tracker this process starts itself unlinks the segment when
    this process exits. A DataLoader worker shares its parent's tracker (fork
    and spawn both hand it down), where the registration is a harmless
    duplicate; only a private tracker is told to forget the segment.
    """
    try:
        if sys.version_info >= (3, 13):
            return shared_memory.SharedMemory(name=name, create=False, track=False)
        from multiprocessing import resource_tracker

        tracker: Any = resource_tracker._resource_tracker
        shared_tracker = tracker._fd is not None
        shm = shared_memory.SharedMemory(name=name, create=False)
        if not shared_tracker:
            resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
        return shm
    except FileNotFoundError:
        raise HotsetError(f"no shared-memory cache named {name!r} (closed by its owner?)") from None


class _Segment:
    """The mapping and the array views on it, released together.

    Kept apart from :class:`SharedMemoryCache` so the finalizer can hold it
    without holding the cache, and can drop every view before unmapping.
    """

    def __init__(self, shm: shared_memory.SharedMemory, *, owner: bool) -> None:
        self.shm = shm
        self.name = shm.name
        self.owner_pid = os.getpid() if owner else -1
        buf = shm.buf
        assert buf is not None  # typeshed: None only after close()
        self.buf: memoryview = buf
        header = np.ndarray((_HEADER_BYTES // 8,), dtype=np.uint64, buffer=buf)
        self.header: U64Array = header
        self.closed = False

    def map_tables(self) -> None:
        n_slots = int(self.header[_H_N_SLOTS])
        free_cap = int(self.header[_H_FREE_CAP])
        arena_size = int(self.header[_H_ARENA])
        self.n_slots = n_slots
        self.slot_base = _HEADER_BYTES
        free_base = _HEADER_BYTES + _SLOT_BYTES * n_slots
        self.arena_base = _align(free_base + _EXTENT_BYTES * free_cap)
        if self.shm.size < self.arena_base + arena_size:
            raise HotsetError(
                f"shared-memory cache {self.name!r} is truncated: {self.shm.size} bytes, "
                f"layout needs {self.arena_base + arena_size}"
            )
        buf = self.buf
        self.slots: U64Array = np.ndarray((n_slots, 4), np.uint64, buf, self.slot_base)
        self.free_off: U64Array = np.ndarray((free_cap,), np.uint64, buf, free_base)
        self.free_len: U64Array = np.ndarray((free_cap,), np.uint64, buf, free_base + 8 * free_cap)
        self.arena: npt.NDArray[np.uint8] = np.ndarray(
            (arena_size,), np.uint8, buf, self.arena_base
        )

    def release(self) -> None:
        """Drop the views, unmap, and unlink if this process created the segment."""
        if self.closed:
            return
        self.closed = True
        for attr in ("header", "slots", "free_off", "free_len", "arena", "buf"):
            self.__dict__.pop(attr, None)
        try:
            self.shm.close()
        except BufferError:
            # A stray view (say, in a traceback) still pins the mapping; collect and retry.
            gc.collect()
            with contextlib.suppress(BufferError):
                self.shm.close()
        if self.owner_pid == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.shm.unlink()


def _out_of_range(seg: _Segment, sample_id: int) -> HotsetError:
    return HotsetError(f"sample id {sample_id} out of range for a cache of {seg.n_slots} slots")


def _attach_pickled(name: str, verify: bool) -> SharedMemoryCache:
    return SharedMemoryCache(name=name, create=False, verify=verify)


class SharedMemoryCache:
    """A byte-budgeted cache in one shared-memory segment, keyed by sample id.

    ``n_slots`` is the dataset size: sample ids ``0 .. n_slots - 1`` each have
    one slot. With ``create=False`` the cache attaches to the segment ``name``
    and reads capacity and slot count from its header (values given must match).
    """

    def __init__(
        self,
        capacity_bytes: int | str | None = None,
        *,
        n_slots: int | None = None,
        name: str | None = None,
        create: bool = True,
        verify: bool = False,
        arena_slack: float = DEFAULT_ARENA_SLACK,
    ) -> None:
        if name is not None and (not isinstance(name, str) or not _NAME_PATTERN.match(name)):
            raise HotsetError(
                f"shared-memory cache name must be 1-200 of [A-Za-z0-9_.-], got {name!r}"
            )
        self._verify = bool(verify)
        self._stats = CacheStatsCounter()
        if create:
            seg = self._create(capacity_bytes, n_slots, name, arena_slack)
        else:
            if name is None:
                raise HotsetError("shared-memory cache: create=False needs the segment name")
            seg = self._attach(name, capacity_bytes, n_slots)
        self._seg = seg
        self._capacity = int(seg.header[_H_CAPACITY])
        self._finalizer = weakref.finalize(self, seg.release)
        if create:
            _install_sigterm_cleanup()

    @staticmethod
    def _create(
        capacity_bytes: int | str | None,
        n_slots: int | None,
        name: str | None,
        arena_slack: float,
    ) -> _Segment:
        if capacity_bytes is None:
            raise HotsetError("shared-memory cache: capacity_bytes is required to create one")
        capacity = parse_bytes(capacity_bytes, name="capacity_bytes")
        if isinstance(n_slots, bool) or not isinstance(n_slots, int) or n_slots < 1:
            raise HotsetError(
                f"shared-memory cache: n_slots must be a positive int (the dataset size), "
                f"got {n_slots!r}"
            )
        if (
            isinstance(arena_slack, bool)
            or not isinstance(arena_slack, int | float)
            or not 0 <= arena_slack <= 4
        ):
            raise HotsetError(f"arena_slack must be a number in [0, 4], got {arena_slack!r}")
        free_cap = _free_cap(n_slots)
        arena_size = capacity + int(capacity * arena_slack)
        arena_base = _align(_HEADER_BYTES + _SLOT_BYTES * n_slots + _EXTENT_BYTES * free_cap)
        # Reclaim what killed owners left behind before taking more memory; a
        # failure here must never stop the cache from being created.
        with contextlib.suppress(OSError):
            reclaim_stale_segments()
        seg_name = name if name is not None else segment_name(secrets.token_hex(6))
        try:
            shm = shared_memory.SharedMemory(
                name=seg_name, create=True, size=max(1, arena_base + arena_size)
            )
        except FileExistsError:
            raise HotsetError(f"shared-memory segment {seg_name!r} already exists") from None
        seg = _Segment(shm, owner=True)
        header = seg.header
        seg.buf[: len(_MAGIC)] = _MAGIC
        header[_H_VERSION] = _VERSION
        header[_H_N_SLOTS] = n_slots
        header[_H_CAPACITY] = capacity
        header[_H_ARENA] = arena_size
        header[_H_FREE_CAP] = free_cap
        header[_H_WRITER] = 0
        header[_H_OWNER_PID], header[_H_OWNER_START], header[_H_OWNER_NS] = owner_identity()
        seg.map_tables()
        seg.slots[:] = 0
        if arena_size:
            seg.free_off[0] = 0
            seg.free_len[0] = arena_size
            header[_H_N_FREE] = 1
        return seg

    @staticmethod
    def _attach(name: str, capacity_bytes: int | str | None, n_slots: int | None) -> _Segment:
        shm = _attach_segment(name)
        seg = _Segment(shm, owner=False)
        if bytes(seg.buf[: len(_MAGIC)]) != _MAGIC:
            seg.release()
            raise HotsetError(f"shared-memory segment {name!r} is not a hotset cache")
        if int(seg.header[_H_VERSION]) != _VERSION:
            version = int(seg.header[_H_VERSION])
            seg.release()
            raise HotsetError(f"shared-memory cache {name!r} has layout version {version}")
        checks = (
            ("capacity_bytes", capacity_bytes, _H_CAPACITY),
            ("n_slots", n_slots, _H_N_SLOTS),
        )
        for label, given, field in checks:
            if given is None:
                continue
            expected = parse_bytes(given, name=label) if label == "capacity_bytes" else given
            actual = int(seg.header[field])
            if expected != actual:
                seg.release()
                raise HotsetError(
                    f"shared-memory cache {name!r} has {label}={actual}, not {given!r}"
                )
        seg.map_tables()
        return seg

    # -- identity ---------------------------------------------------------------

    @property
    def name(self) -> str:
        """The segment name; ``SharedMemoryCache(name=..., create=False)`` attaches to it."""
        return self._seg.name

    @property
    def capacity_bytes(self) -> int:
        return self._capacity

    @property
    def n_slots(self) -> int:
        return self._live().n_slots

    @property
    def arena_bytes(self) -> int:
        """Arena size: capacity plus the fragmentation slack."""
        return int(self._live().header[_H_ARENA])

    @property
    def index_bytes(self) -> int:
        """Segment bytes spent on the index (header, slot table, free table)."""
        return self._live().arena_base

    @property
    def is_owner(self) -> bool:
        """True in the process that created the segment (it unlinks at close)."""
        return self._seg.owner_pid == os.getpid()

    def __reduce__(self) -> tuple[Any, tuple[str, bool]]:
        # Pickling (spawned DataLoader workers) carries the name; the child attaches.
        return (_attach_pickled, (self.name, self._verify))

    def __repr__(self) -> str:
        state = "closed" if self._seg.closed else f"{self.used_bytes()} bytes used"
        return f"SharedMemoryCache(name={self.name!r}, capacity_bytes={self._capacity}, {state})"

    def __enter__(self) -> SharedMemoryCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads (lock-free) --------------------------------------------------------

    def _live(self) -> _Segment:
        seg = self._seg
        if seg.closed:
            raise HotsetError(f"shared-memory cache {seg.name!r} is closed")
        return seg

    def _slot_id(self, seg: _Segment, key: CacheKey) -> int:
        if key.sample_id >= seg.n_slots:
            raise _out_of_range(seg, key.sample_id)
        return key.sample_id

    def _read(self, seg: _Segment, sid: int, want: int, *, copy: bool) -> bytes | bool | None:
        """One consistent look at a slot: bytes (copy) / presence (not copy) / None.

        The general path, spinning while a writer holds the slot. ``get_many``
        inlines the first, uncontended attempt and comes here only to retry.
        """
        buf = seg.buf
        base = seg.slot_base + _SLOT_BYTES * sid
        arena_base = seg.arena_base
        arena_size = int(seg.header[_H_ARENA])
        deadline = 0.0
        spins = 0
        while True:
            seq, off, len1, digest = _SLOT.unpack_from(buf, base)
            if not seq & 1:
                if len1 == 0 or digest != want or off + len1 - 1 > arena_size:
                    # Absent, other content, or an extent no writer makes: a miss
                    # is always safe to answer, so it needs no second look.
                    return None if copy else False
                start = arena_base + off
                result = bytes(buf[start : start + len1 - 1]) if copy else True
                if _U64.unpack_from(buf, base)[0] == seq:
                    return result
            # A writer is on this slot: retry; give up (a miss, never wrong bytes)
            # if the writer died holding it or takes implausibly long.
            spins += 1
            if spins < 64:
                continue
            if deadline == 0.0:
                deadline = time.monotonic() + _READ_GIVE_UP_SECONDS
            if not self._writer_alive(seg) or time.monotonic() > deadline:
                return None if copy else False
            time.sleep(0)

    @staticmethod
    def _writer_alive(seg: _Segment) -> bool:
        pid = int(seg.header[_H_WRITER])
        if pid == 0:
            return True  # between two writes; the counter will settle
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def get_many(self, keys: Sequence[CacheKey]) -> list[bytes | None]:
        # The hot path: one pass over the keys, everything per batch hoisted into
        # locals, and per hit exactly one copy (shared buffer -> the returned bytes)
        # between two reads of the slot's sequence counter. Only a slot a writer
        # is on (odd or moved counter) goes to _read, which retries and gives up.
        seg = self._live()
        buf = seg.buf
        slot_base = seg.slot_base
        arena_base = seg.arena_base
        arena_size = int(seg.header[_H_ARENA])
        n_slots = seg.n_slots
        verify = self._verify
        unpack_slot = _SLOT.unpack_from
        unpack_seq = _U64.unpack_from
        out: list[bytes | None] = []
        append = out.append
        hits = served = 0
        for raw in keys:
            key = check_cache_key(raw)
            sid = key.sample_id
            if sid >= n_slots:
                raise _out_of_range(seg, sid)
            want = int(key.content_hash, 16)
            base = slot_base + _SLOT_BYTES * sid
            seq, off, len1, digest = unpack_slot(buf, base)
            data: bytes | None
            if seq & 1:
                data = self._read_retry(seg, sid, want)
            elif len1 == 0 or digest != want or off + len1 - 1 > arena_size:
                # A miss (absent, other content, or an extent no writer makes):
                # serving nothing is always safe, so no second look at the counter.
                append(None)
                continue
            else:
                start = arena_base + off
                data = bytes(buf[start : start + len1 - 1])
                if unpack_seq(buf, base)[0] != seq:
                    data = self._read_retry(seg, sid, want)
            if data is None:
                append(None)
                continue
            if verify and xxhash.xxh3_64_intdigest(data) != want:
                raise IntegrityError(
                    f"shared-memory cache {seg.name!r}: sample {sid} should hash "
                    f"to {key.content_hash} but its {len(data)} cached bytes hash to "
                    f"{xxhash.xxh3_64_hexdigest(data)}"
                )
            hits += 1
            served += len(data)
            append(data)
        self._stats.add_gets(hits, len(out) - hits, served)
        return out

    def _read_retry(self, seg: _Segment, sid: int, want: int) -> bytes | None:
        data = self._read(seg, sid, want, copy=True)
        assert not isinstance(data, bool)
        return data

    def contains(self, key: CacheKey) -> bool:
        seg = self._live()
        key = check_cache_key(key)
        sid = self._slot_id(seg, key)
        return bool(self._read(seg, sid, int(key.content_hash, 16), copy=False))

    def used_bytes(self) -> int:
        return int(self._live().header[_H_USED])

    def __len__(self) -> int:
        return int(self._live().header[_H_LIVE])

    def stats(self) -> CacheStats:
        return self._stats.snapshot()

    # -- writes (one writer at a time) --------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[_Segment]:
        seg = self._live()
        fd: int = seg.shm._fd  # type: ignore[attr-defined]
        with _process_lock(seg.name):
            fcntl.lockf(fd, fcntl.LOCK_EX)
            try:
                if int(seg.header[_H_WRITER]) != 0:
                    self._recover(seg)
                seg.header[_H_WRITER] = os.getpid()
                yield seg
                # Reached only on success: an exception leaves the marker set, so the
                # next writer repairs whatever was half done.
                seg.header[_H_WRITER] = 0
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN)

    def put_many(self, items: Sequence[tuple[CacheKey, bytes]]) -> None:
        seg = self._live()
        plan: dict[int, tuple[CacheKey, bytes]] = {}
        for item in items:
            if not isinstance(item, tuple) or len(item) != 2:
                raise HotsetError(f"cache put: items must be (key, bytes) pairs, got {item!r:.80}")
            key = check_cache_key(item[0])
            payload = check_payload(key, item[1], verify=self._verify)
            plan[self._slot_id(seg, key)] = (key, payload)  # the last write of an id wins
        if not plan:
            return
        refused: tuple[int, int, int] | None = None
        written = written_bytes = 0
        with self._writing() as seg:
            slots = seg.slots
            writes: list[tuple[int, int, bytes]] = []
            freed = added = 0
            for sid, (key, payload) in plan.items():
                want = int(key.content_hash, 16)
                len1 = int(slots[sid, _S_LEN1])
                if len1 and int(slots[sid, _S_HASH]) == want:
                    continue  # already cached: same id, same content
                freed += len1 - 1 if len1 else 0
                added += len(payload)
                writes.append((sid, want, payload))
            used = int(seg.header[_H_USED])
            if used - freed + added > self._capacity:
                refused = (len(writes), added - freed, used)
            else:
                # Free every replaced entry before allocating any: the budget was
                # checked on the net total, and the arena may have no slack.
                for sid, _, _ in writes:
                    self._drop_slot(seg, sid)
                for sid, want, payload in writes:
                    self._write_slot(seg, sid, want, payload)
                written, written_bytes = len(writes), added
        if refused is not None:
            count, adding, used = refused
            refuse_over_budget(items=count, adding=adding, used=used, capacity=self._capacity)
        self._stats.add_puts(written, written_bytes)

    def _drop_slot(self, seg: _Segment, sid: int) -> bool:
        """Empty a slot (under its seqlock) and free its bytes; False if it was empty."""
        slots, header = seg.slots, seg.header
        len1 = int(slots[sid, _S_LEN1])
        if not len1:
            return False
        seq = int(slots[sid, _S_SEQ])
        slots[sid, _S_SEQ] = seq + 1
        slots[sid, _S_LEN1] = 0
        slots[sid, _S_SEQ] = seq + 2
        header[_H_USED] -= np.uint64(len1 - 1)
        header[_H_LIVE] -= np.uint64(1)
        self._free(seg, int(slots[sid, _S_OFF]), len1 - 1)
        return True

    def _write_slot(self, seg: _Segment, sid: int, want: int, payload: bytes) -> None:
        """Fill an empty slot: odd counter, allocate, copy, fields, even counter."""
        slots, header = seg.slots, seg.header
        seq = int(slots[sid, _S_SEQ])
        slots[sid, _S_SEQ] = seq + 1  # odd: readers of this slot retry
        size = len(payload)
        off = self._alloc(seg, size)
        if size:
            start = seg.arena_base + off
            seg.buf[start : start + size] = payload
        slots[sid, _S_OFF] = off
        slots[sid, _S_HASH] = want
        slots[sid, _S_LEN1] = size + 1
        slots[sid, _S_SEQ] = seq + 2
        header[_H_USED] += np.uint64(size)
        header[_H_LIVE] += np.uint64(1)

    def delete_many(self, keys: Sequence[CacheKey]) -> None:
        seg = self._live()
        checked = [check_cache_key(k) for k in keys]
        for key in checked:
            self._slot_id(seg, key)
        if not checked:
            return
        deleted = 0
        with self._writing() as seg:
            slots = seg.slots
            for key in checked:
                sid = key.sample_id
                if int(slots[sid, _S_HASH]) == int(key.content_hash, 16):
                    deleted += self._drop_slot(seg, sid)
        self._stats.add_deletes(deleted)

    def clear(self) -> None:
        with self._writing() as seg:
            slots, header = seg.slots, seg.header
            slots[:, _S_SEQ] += np.uint64(1)
            slots[:, _S_LEN1] = 0
            slots[:, _S_SEQ] += np.uint64(1)
            self._set_free(seg, [(0, int(header[_H_ARENA]))])
            header[_H_USED] = 0
            header[_H_LIVE] = 0

    def drop(self) -> None:
        """Empty the cache; the segment itself goes when its owner closes it."""
        self.clear()

    def close(self) -> None:
        """Detach; the owning process also unlinks the segment. Safe to call twice."""
        seg = self._seg
        if seg.closed:
            return
        # Closing a descriptor drops this process's record locks: never mid-write.
        with _process_lock(seg.name):
            self._finalizer()

    # -- allocator (caller holds the write lock) ------------------------------------

    @staticmethod
    def _set_free(seg: _Segment, extents: Sequence[tuple[int, int]]) -> None:
        extents = [(o, n) for o, n in extents if n > 0]
        for i, (o, n) in enumerate(extents):
            seg.free_off[i] = o
            seg.free_len[i] = n
        seg.header[_H_N_FREE] = len(extents)

    def _alloc(self, seg: _Segment, size: int) -> int:
        if size == 0:
            return 0
        for attempt in range(2):
            n_free = int(seg.header[_H_N_FREE])
            fits = seg.free_len[:n_free] >= size
            i = int(fits.argmax()) if n_free else 0
            if n_free and fits[i]:
                off, length = int(seg.free_off[i]), int(seg.free_len[i])
                if length == size:
                    seg.free_off[i : n_free - 1] = seg.free_off[i + 1 : n_free]
                    seg.free_len[i : n_free - 1] = seg.free_len[i + 1 : n_free]
                    seg.header[_H_N_FREE] = n_free - 1
                else:
                    seg.free_off[i] = off + size
                    seg.free_len[i] = length - size
                return off
            if attempt == 0:
                self._compact(seg)
        raise RuntimeError(  # the budget check makes this unreachable
            f"shared-memory cache {seg.name!r}: no room for {size} bytes after compaction"
        )

    def _free(self, seg: _Segment, off: int, size: int) -> None:
        if size == 0:
            return
        n_free = int(seg.header[_H_N_FREE])
        free_off, free_len = seg.free_off, seg.free_len
        p = int(np.searchsorted(free_off[:n_free], off))
        joins_prev = p > 0 and int(free_off[p - 1]) + int(free_len[p - 1]) == off
        joins_next = p < n_free and off + size == int(free_off[p])
        if joins_prev and joins_next:
            free_len[p - 1] += np.uint64(size) + free_len[p]
            free_off[p : n_free - 1] = free_off[p + 1 : n_free]
            free_len[p : n_free - 1] = free_len[p + 1 : n_free]
            seg.header[_H_N_FREE] = n_free - 1
        elif joins_prev:
            free_len[p - 1] += np.uint64(size)
        elif joins_next:
            free_off[p] = off
            free_len[p] += np.uint64(size)
        elif n_free == len(free_off):
            self._compact(seg)  # the table is full: one extent afterwards
        else:
            free_off[p + 1 : n_free + 1] = free_off[p:n_free]
            free_len[p + 1 : n_free + 1] = free_len[p:n_free]
            free_off[p] = off
            free_len[p] = size
            seg.header[_H_N_FREE] = n_free + 1

    def _compact(self, seg: _Segment) -> None:
        """Slide live entries to the front, each under its seqlock; one free extent remains."""
        slots, arena = seg.slots, seg.arena
        live = np.flatnonzero(slots[:, _S_LEN1] > 1)
        order = live[np.argsort(slots[live, _S_OFF], kind="stable")]
        pos = 0
        for sid in order.tolist():
            off, size = int(slots[sid, _S_OFF]), int(slots[sid, _S_LEN1]) - 1
            if off != pos:
                seq = int(slots[sid, _S_SEQ])
                slots[sid, _S_SEQ] = seq + 1
                arena[pos : pos + size] = arena[off : off + size]  # overlap-safe
                slots[sid, _S_OFF] = pos
                slots[sid, _S_SEQ] = seq + 2
            pos += size
        self._set_free(seg, [(pos, int(seg.header[_H_ARENA]) - pos)])

    def _recover(self, seg: _Segment) -> None:
        """Repair after a writer died mid-write: drop torn slots, rebuild the free table."""
        slots, header = seg.slots, seg.header
        torn = (slots[:, _S_SEQ] & np.uint64(1)) == 1
        if torn.any():
            slots[torn, _S_LEN1] = 0
            slots[torn, _S_SEQ] += np.uint64(1)
        live = np.flatnonzero(slots[:, _S_LEN1] > 0)
        sizes = slots[live, _S_LEN1].astype(np.int64) - 1
        offs = slots[live, _S_OFF].astype(np.int64)
        arena_size = int(header[_H_ARENA])
        order = np.argsort(offs, kind="stable")
        offs, sizes = offs[order], sizes[order]
        nonempty = sizes > 0
        starts, ends = offs[nonempty], offs[nonempty] + sizes[nonempty]
        if (ends > arena_size).any() or (starts[1:] < ends[:-1]).any():
            # Overlapping or out-of-arena entries: trust nothing, start empty.
            slots[:, _S_SEQ] += np.uint64(1)
            slots[:, _S_LEN1] = 0
            slots[:, _S_SEQ] += np.uint64(1)
            sizes = sizes[:0]
            live = live[:0]
            starts = ends = starts[:0]
        gap_starts = np.concatenate(([0], ends))
        gap_ends = np.concatenate((starts, [arena_size]))
        keep = gap_ends > gap_starts
        extents = list(
            zip(gap_starts[keep].tolist(), (gap_ends - gap_starts)[keep].tolist(), strict=True)
        )
        header[_H_USED] = int(sizes.sum())
        header[_H_LIVE] = len(live)
        if len(extents) > len(seg.free_off):
            self._compact(seg)
        else:
            self._set_free(seg, extents)
