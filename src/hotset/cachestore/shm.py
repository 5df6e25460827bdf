"""The embedded default cache: one shared-memory segment every DataLoader worker maps.

No server, no copies between processes: the owner (the main process) creates a
``multiprocessing.shared_memory.SharedMemory`` segment; a worker gets the cache
either by fork (it inherits the mapping) or by pickling (spawn: the pickle
carries only the segment name and the child attaches). Workers come and go
between epochs; the segment outlives them and is unlinked by its owner at
:meth:`SharedMemoryCache.close`, at garbage collection or at interpreter exit.

:class:`SharedMemoryCache` composes parts with one job each:

* :mod:`~hotset.cachestore.shm_layout`: the segment's byte layout (a format
  other processes and ``hotset cache ls/gc`` read), and the index overhead;
* :mod:`~hotset.cachestore.shm_segment`: creating, attaching, mapping and
  releasing the segment;
* :mod:`~hotset.cachestore.shm_index`: the slot table, read lock-free under a
  per-slot seqlock and written under the write lock;
* :mod:`~hotset.cachestore.shm_alloc`: first-fit allocation of arena bytes,
  coalescing and compaction;
* :mod:`~hotset.cachestore.shm_liveness`: one writer at a time, repairs after a
  writer died mid-write, and the owner's unlink on SIGTERM;
* :mod:`~hotset.cachestore.shm_gc`: owner identity, and reclaiming segments
  whose owner was SIGKILLed (every new owning cache runs it first; ``hotset
  cache gc`` does the same by hand);
* :mod:`~hotset.cachestore.shm_members`: a node's cache, which the local ranks
  of a job share (``members=`` at creation, :meth:`SharedMemoryCache.join` for
  the other ranks): it belongs to its members, and the last one out unlinks it.

This module keeps what a cache promises: the byte budget (a put that would pass
``capacity_bytes`` is refused and changes nothing), per-handle stats, and the
``CacheStore`` API. With ``verify=True`` every get also re-hashes the bytes and
raises :class:`~hotset.errors.IntegrityError` on a mismatch (any handle on the
segment can write it, with or without ``verify``). The loader opens its cache
without ``verify`` and checks hits itself (:mod:`hotset.torch.fetch`), so that a
bad entry is dropped and re-read instead of failing a whole ``get_many``.

Stats are per handle: each process counts what it did.
"""

from __future__ import annotations

import contextlib
import os
import re
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import hotset.cachestore.shm_index as index
from hotset.cachestore.base import (
    CacheKey,
    CacheStats,
    CacheStatsCounter,
    check_cache_key,
    check_payload,
    refuse_over_budget,
)
from hotset.cachestore.shm_layout import (
    DEFAULT_ARENA_SLACK,
    H_ARENA,
    H_CAPACITY,
    H_LIVE,
    H_USED,
    S_HASH,
    S_LEN1,
    index_overhead_bytes,
)
from hotset.cachestore.shm_liveness import install_sigterm_cleanup, process_lock, write_lock
from hotset.cachestore.shm_members import JOIN_TIMEOUT_S, attach_member, become_member, leave
from hotset.cachestore.shm_segment import Identity, Segment, create_segment, open_segment
from hotset.errors import HotsetError

__all__ = ["DEFAULT_ARENA_SLACK", "SharedMemoryCache", "index_overhead_bytes"]

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")


def _check_name(name: object) -> None:
    if name is not None and (not isinstance(name, str) or not _NAME_PATTERN.match(name)):
        raise HotsetError(f"shared-memory cache name must be 1-200 of [A-Za-z0-9_.-], got {name!r}")


def _attach_pickled(name: str, verify: bool, node: bool = False) -> SharedMemoryCache:
    return SharedMemoryCache(name=name, create=False, verify=verify, node=node)


def _release(seg: Segment) -> None:
    """The finalizer: a member leaves (the last one out unlinks), then unmap.

    Closing a descriptor drops this process's record locks, so the mapping is
    released under the process lock: never in the middle of this process's write.
    """
    last = False
    if seg.member_pid == os.getpid() and not seg.closed:
        with contextlib.suppress(Exception):  # at exit: nothing to report to
            last = leave(seg)
    with process_lock(seg.name):
        seg.release()
    if last:
        seg.unlink_node()


class SharedMemoryCache:
    """A byte-budgeted cache in one shared-memory segment, keyed by sample id.

    ``n_slots`` is the dataset size: sample ids ``0 .. n_slots - 1`` each have
    one slot. With ``create=False`` the cache attaches to the segment ``name``
    and reads capacity and slot count from its header (values given must match).

    ``members`` (identities, this process's among them) creates a node's cache
    that the local ranks of a job share; the other ranks attach with
    :meth:`join`. ``node=True`` attaches to one without being a member (a rank's
    DataLoader worker).
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
        members: Sequence[Identity] = (),
        node: bool = False,
    ) -> None:
        _check_name(name)
        if create:
            seg = create_segment(capacity_bytes, n_slots, name, arena_slack, members)
            if members:
                try:
                    become_member(seg)
                except BaseException:
                    seg.release()
                    seg.unlink_node()
                    raise
        else:
            if name is None:
                raise HotsetError("shared-memory cache: create=False needs the segment name")
            seg = open_segment(name, capacity_bytes, n_slots, node=node)
        self._adopt(seg, verify)

    @classmethod
    def join(
        cls,
        name: str,
        *,
        capacity_bytes: int,
        n_slots: int,
        creator: Identity,
        verify: bool = False,
        timeout_s: float = JOIN_TIMEOUT_S,
    ) -> SharedMemoryCache:
        """Attach to the node's cache ``name`` as one of its members, once ``creator``
        has made it (:func:`~hotset.cachestore.shm_members.attach_member`)."""
        _check_name(name)
        seg = attach_member(
            name,
            capacity_bytes=capacity_bytes,
            n_slots=n_slots,
            creator=creator,
            timeout_s=timeout_s,
        )
        cache = cls.__new__(cls)
        cache._adopt(seg, verify)
        return cache

    def _adopt(self, seg: Segment, verify: bool) -> None:
        """Serve from ``seg``; its owner or members unlink it on SIGTERM too."""
        self._verify = bool(verify)
        self._stats = CacheStatsCounter()
        self._seg = seg
        self._capacity = int(seg.header[H_CAPACITY])
        self._finalizer = weakref.finalize(self, _release, seg)
        if seg.owner_pid == os.getpid() or seg.member_pid == os.getpid():
            install_sigterm_cleanup()

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
        return int(self._live().header[H_ARENA])

    @property
    def index_bytes(self) -> int:
        """Segment bytes spent on the index (header, slot table, free table)."""
        return self._live().arena_base

    @property
    def is_owner(self) -> bool:
        """True in the process that created the segment (it unlinks at close); a node's
        cache has no owner but members (:attr:`is_member`)."""
        return self._seg.owner_pid == os.getpid()

    @property
    def is_member(self) -> bool:
        """True in a rank sharing this node's cache (it leaves at close; the last unlinks)."""
        return self._seg.member_pid == os.getpid()

    @property
    def node(self) -> bool:
        """Whether this is a node's cache, shared by the local ranks of a job."""
        return self._seg.node

    def __reduce__(self) -> tuple[Any, tuple[str, bool, bool]]:
        # Pickling (spawned DataLoader workers) carries the name; the child attaches.
        return (_attach_pickled, (self.name, self._verify, self._seg.node))

    def __repr__(self) -> str:
        state = "closed" if self._seg.closed else f"{self.used_bytes()} bytes used"
        return f"SharedMemoryCache(name={self.name!r}, capacity_bytes={self._capacity}, {state})"

    def __enter__(self) -> SharedMemoryCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads (lock-free) --------------------------------------------------------

    def _live(self) -> Segment:
        seg = self._seg
        if seg.closed:
            raise HotsetError(f"shared-memory cache {seg.name!r} is closed")
        return seg

    def get_many(self, keys: Sequence[CacheKey]) -> list[bytes | None]:
        out, hits, served = index.read_many(self._live(), keys, verify=self._verify)
        self._stats.add_gets(hits, len(out) - hits, served)
        return out

    def contains(self, key: CacheKey) -> bool:
        seg = self._live()
        key = check_cache_key(key)
        sid = index.slot_id(seg, key)
        return bool(index.read(seg, sid, int(key.content_hash, 16), copy=False))

    def used_bytes(self) -> int:
        return int(self._live().header[H_USED])

    def __len__(self) -> int:
        return int(self._live().header[H_LIVE])

    def stats(self) -> CacheStats:
        return self._stats.snapshot()

    # -- writes (one writer at a time) --------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Segment]:
        with write_lock(self._live(), repair=index.recover) as seg:
            yield seg

    def put_many(self, items: Sequence[tuple[CacheKey, bytes]]) -> None:
        plan = self._put_plan(items)
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
                len1 = int(slots[sid, S_LEN1])
                if len1 and int(slots[sid, S_HASH]) == want:
                    continue  # already cached: same id, same content
                freed += len1 - 1 if len1 else 0
                added += len(payload)
                writes.append((sid, want, payload))
            used = int(seg.header[H_USED])
            if used - freed + added > self._capacity:
                refused = (len(writes), added - freed, used)
            else:
                # Free every replaced entry before allocating any: the budget was
                # checked on the net total, and the arena may have no slack.
                for sid, _, _ in writes:
                    index.drop_slot(seg, sid)
                for sid, want, payload in writes:
                    index.write_slot(seg, sid, want, payload)
                written, written_bytes = len(writes), added
        if refused is not None:
            count, adding, used = refused
            refuse_over_budget(items=count, adding=adding, used=used, capacity=self._capacity)
        self._stats.add_puts(written, written_bytes)

    def _put_plan(
        self, items: Sequence[tuple[CacheKey, bytes]]
    ) -> dict[int, tuple[CacheKey, bytes]]:
        """Checked (key, payload) by slot, the last write of an id winning."""
        seg = self._live()
        plan: dict[int, tuple[CacheKey, bytes]] = {}
        for item in items:
            if not isinstance(item, tuple) or len(item) != 2:
                raise HotsetError(f"cache put: items must be (key, bytes) pairs, got {item!r:.80}")
            key = check_cache_key(item[0])
            payload = check_payload(key, item[1], verify=self._verify)
            plan[index.slot_id(seg, key)] = (key, payload)
        return plan

    def delete_many(self, keys: Sequence[CacheKey]) -> None:
        seg = self._live()
        checked = [check_cache_key(k) for k in keys]
        for key in checked:
            index.slot_id(seg, key)
        if not checked:
            return
        deleted = 0
        with self._writing() as seg:
            slots = seg.slots
            for key in checked:
                sid = key.sample_id
                if int(slots[sid, S_HASH]) == int(key.content_hash, 16):
                    deleted += index.drop_slot(seg, sid)
        self._stats.add_deletes(deleted)

    def clear(self) -> None:
        with self._writing() as seg:
            index.clear_slots(seg)

    def drop(self) -> None:
        """Empty the cache; the segment itself goes when its owner closes it."""
        self.clear()

    def close(self) -> None:
        """Detach; the owning process also unlinks the segment, and so does the last
        member of a node's cache. Safe to call twice."""
        if self._seg.closed:
            return
        self._finalizer()
