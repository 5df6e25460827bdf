"""SharedMemoryCache in one process: bytes, budget, allocator, verify, lifetime."""

from __future__ import annotations

import gc
import os
import pickle
import threading
import time
from multiprocessing import shared_memory
from unittest import mock

import numpy as np
import pytest
from cachestore_support import item, payload
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.cachestore import (
    CacheKey,
    CacheStore,
    content_hash,
    index_overhead_bytes,
    shm_index,
    shm_layout,
)
from hotset.cachestore.shm import SharedMemoryCache
from hotset.errors import HotsetError, IntegrityError


def shm_path(name: str) -> str:
    return f"/dev/shm/{name}"


def check_layout(cache: SharedMemoryCache) -> None:
    """White-box: live extents and free extents tile the arena exactly, without overlap."""
    seg = cache._seg
    slots = seg.slots
    live = np.flatnonzero(slots[:, 2] > 1)
    extents = [(int(slots[i, 1]), int(slots[i, 2]) - 1) for i in live]
    n_free = int(seg.header[7])
    extents += [(int(seg.free_off[i]), int(seg.free_len[i])) for i in range(n_free)]
    extents.sort()
    pos = 0
    for off, size in extents:
        assert off == pos, f"gap or overlap at {pos}: next extent starts at {off}"
        pos += size
    assert pos == cache.arena_bytes
    assert int(seg.header[6]) == sum(int(slots[i, 2]) - 1 for i in live)
    assert (slots[:, 0] % 2 == 0).all(), "a slot was left mid-write"


@pytest.fixture
def cache() -> SharedMemoryCache:
    c = SharedMemoryCache(10_000, n_slots=64)
    yield c
    c.close()


def test_is_a_cache_store(cache: SharedMemoryCache) -> None:
    assert isinstance(cache, CacheStore)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.integers(0, 31), st.binary(max_size=3000), max_size=12))
def test_round_trip_is_byte_exact(contents: dict[int, bytes]) -> None:
    with SharedMemoryCache(64_000, n_slots=32) as cache:
        items = [item(i, data) for i, data in contents.items()]
        cache.put_many(items)
        keys = [k for k, _ in items]
        assert cache.get_many(keys) == list(contents.values())
        assert all(cache.contains(k) for k in keys)
        assert cache.used_bytes() == sum(map(len, contents.values()))
        assert len(cache) == len(contents)
        # Same id, other content: a miss, never the cached bytes.
        stale = [CacheKey(k.sample_id, content_hash(v + b"!")) for k, v in items]
        assert cache.get_many(stale) == [None] * len(stale)
        absent = [CacheKey(i, "0" * 16) for i in range(32) if i not in contents]
        assert cache.get_many(absent) == [None] * len(absent)
        check_layout(cache)


def test_miss_for_ids_never_put(cache: SharedMemoryCache) -> None:
    cache.put_many([item(1, b"one")])
    key_one = CacheKey(1, content_hash(b"one"))
    assert cache.get_many([CacheKey(2, content_hash(b"one")), key_one]) == [None, b"one"]
    assert not cache.contains(CacheKey(2, content_hash(b"one")))


_put = st.tuples(
    st.just("put"),
    st.lists(
        st.tuples(st.integers(0, 15), st.integers(0, 700), st.integers(0, 2)),
        min_size=1,
        max_size=3,
    ),
)
_delete = st.tuples(st.just("delete"), st.lists(st.integers(0, 15), min_size=1, max_size=3))
_clear = st.tuples(st.just("clear"), st.just([]))
# Weighted towards puts and deletes: churn is what fragments the arena.
_op = st.integers(0, 9).flatmap(lambda r: _put if r < 6 else _delete if r < 9 else _clear)
ops = st.lists(_op, min_size=15, max_size=40)


@settings(max_examples=60, deadline=None)
@given(ops, st.sampled_from([0.0, 0.25]), st.sampled_from([2, 4, 1 << 16]))
def test_never_over_budget_and_refusals_change_nothing(
    operations: list[tuple[str, list]], slack: float, free_cap: int
) -> None:
    capacity = 4000
    model: dict[int, bytes] = {}
    with (
        mock.patch.object(shm_layout, "MAX_FREE_EXTENTS", free_cap),
        SharedMemoryCache(capacity, n_slots=16, arena_slack=slack) as cache,
    ):
        for kind, args in operations:
            if kind == "put":
                batch = [item(i, payload(1000 * i + v, size)) for i, size, v in args]
                after = dict(model)
                for key, data in batch:
                    after[key.sample_id] = data
                if sum(map(len, after.values())) > capacity:
                    with pytest.raises(HotsetError, match=f"capacity_bytes={capacity}"):
                        cache.put_many(batch)
                else:
                    cache.put_many(batch)
                    model = after
            elif kind == "delete":
                keys = [CacheKey(i, content_hash(model.get(i, b"?"))) for i in args]
                cache.delete_many(keys)
                for i in args:
                    model.pop(i, None)
            else:
                cache.clear()
                model = {}
            assert cache.used_bytes() == sum(map(len, model.values())) <= capacity
            keys = [CacheKey(i, content_hash(d)) for i, d in model.items()]
            assert cache.get_many(keys) == list(model.values())
            assert len(cache) == len(model)
            check_layout(cache)


def test_fragmented_arena_still_takes_what_the_budget_allows() -> None:
    with SharedMemoryCache(1000, n_slots=20, arena_slack=0) as cache:
        items = [item(i, payload(i, 100)) for i in range(10)]
        cache.put_many(items)
        cache.delete_many([k for k, _ in items[::2]])  # five 100-byte holes
        big = item(15, payload(99, 500))
        cache.put_many([big])  # fits no hole: compaction makes room
        assert cache.used_bytes() == 1000
        kept = [*items[1::2], big]
        assert cache.get_many([k for k, _ in kept]) == [d for _, d in kept]
        check_layout(cache)


def test_a_batch_that_shrinks_one_entry_to_grow_others_fits_without_slack() -> None:
    # Found by hypothesis: the net total fits, but only once the shrunk entry's
    # old bytes are freed, so every replaced entry must be freed before any allocation.
    with SharedMemoryCache(1000, n_slots=4, arena_slack=0) as cache:
        cache.put_many([item(0, payload(0, 400)), item(1, payload(1, 500))])
        batch = [item(2, payload(2, 350)), item(0, payload(3, 0))]
        cache.put_many(batch)
        assert cache.used_bytes() == 850
        assert cache.get_many([k for k, _ in batch]) == [d for _, d in batch]
        check_layout(cache)


def test_over_budget_error_names_sizes_and_changes_nothing(cache: SharedMemoryCache) -> None:
    first = item(0, payload(0, 6000))
    cache.put_many([first])
    with pytest.raises(HotsetError) as err:
        cache.put_many([item(1, payload(1, 3000)), item(2, payload(2, 1001))])
    message = str(err.value)
    assert "adding 4001 bytes" in message
    assert "to 6000 bytes used" in message
    assert "capacity_bytes=10000" in message
    assert cache.used_bytes() == 6000
    assert cache.get_many([first[0], item(1, payload(1, 3000))[0]]) == [first[1], None]


def test_single_item_larger_than_capacity_is_refused() -> None:
    with SharedMemoryCache(100, n_slots=2) as cache, pytest.raises(HotsetError, match="101 bytes"):
        cache.put_many([item(0, payload(0, 101))])


def test_replacing_an_id_frees_its_old_bytes(cache: SharedMemoryCache) -> None:
    old, new = item(5, payload(1, 7000)), item(5, payload(2, 9000))
    cache.put_many([old])
    cache.put_many([new])  # 16000 would break the budget; a replacement frees 7000 first
    assert cache.used_bytes() == 9000
    assert cache.get_many([old[0], new[0]]) == [None, new[1]]


def test_putting_a_cached_entry_again_writes_nothing(cache: SharedMemoryCache) -> None:
    entry = item(3, payload(3, 500))
    cache.put_many([entry])
    cache.put_many([entry])
    stats = cache.stats()
    assert (stats.puts, stats.bytes_written) == (1, 500)
    assert cache.used_bytes() == 500


def test_delete_needs_the_matching_hash(cache: SharedMemoryCache) -> None:
    key, data = item(4, payload(4, 100))
    cache.put_many([(key, data)])
    cache.delete_many([CacheKey(4, content_hash(b"other"))])
    assert cache.get_many([key]) == [data]
    cache.delete_many([key])
    assert cache.get_many([key]) == [None]
    assert cache.stats().deletes == 1


def test_stats_count_keys_and_bytes(cache: SharedMemoryCache) -> None:
    a, b = item(0, payload(0, 10)), item(1, payload(1, 20))
    cache.put_many([a, b])
    cache.get_many([a[0], b[0], CacheKey(2, content_hash(b"x"))])
    stats = cache.stats().as_dict()
    assert stats == {
        "gets": 3,
        "hits": 2,
        "misses": 1,
        "bytes_served": 30,
        "puts": 2,
        "bytes_written": 30,
        "deletes": 0,
        "resyncs": 0,
        "resync_bytes": 0,
    }


def test_clear_empties_and_the_full_budget_is_usable_again(cache: SharedMemoryCache) -> None:
    items = [item(i, payload(i, 999)) for i in range(10)]
    cache.put_many(items)
    cache.clear()
    assert cache.used_bytes() == 0
    assert cache.get_many([k for k, _ in items]) == [None] * 10
    refill = [item(i, payload(100 + i, 1000)) for i in range(10)]
    cache.put_many(refill)
    assert cache.used_bytes() == 10_000
    check_layout(cache)


def test_verify_catches_a_corrupted_arena_byte() -> None:
    with SharedMemoryCache(1000, n_slots=4, verify=True) as cache:
        key, data = item(2, payload(7, 300))
        cache.put_many([(key, data)])
        assert cache.get_many([key]) == [data]
        off = int(cache._seg.slots[2, 1])
        cache._seg.arena[off + 150] ^= 0x01
        with pytest.raises(IntegrityError, match="sample 2 should hash to"):
            cache.get_many([key])
        # A handle without verify serves the flipped bytes: the corruption is real.
        plain = SharedMemoryCache(name=cache.name, create=False)
        served = plain.get_many([key])[0]
        assert served is not None and served != data and len(served) == len(data)
        plain.close()


def test_verify_refuses_bytes_that_do_not_match_their_key() -> None:
    with SharedMemoryCache(1000, n_slots=4, verify=True) as cache:
        with pytest.raises(IntegrityError, match="sample 1"):
            cache.put_many([(CacheKey(1, content_hash(b"good")), b"evil")])
        assert cache.used_bytes() == 0


def test_close_unlinks_and_attaching_afterwards_fails() -> None:
    cache = SharedMemoryCache(1000, n_slots=4)
    name = cache.name
    assert os.path.exists(shm_path(name))
    cache.close()
    cache.close()  # twice is fine
    assert not os.path.exists(shm_path(name))
    with pytest.raises(HotsetError, match="no shared-memory cache named"):
        SharedMemoryCache(name=name, create=False)
    with pytest.raises(HotsetError, match="is closed"):
        cache.get_many([CacheKey(0, "0" * 16)])


def test_garbage_collected_owner_unlinks() -> None:
    cache = SharedMemoryCache(1000, n_slots=4)
    name = cache.name
    del cache
    gc.collect()
    assert not os.path.exists(shm_path(name))


def test_closing_an_attached_handle_keeps_the_segment(cache: SharedMemoryCache) -> None:
    entry = item(1, payload(1, 50))
    cache.put_many([entry])
    other = SharedMemoryCache(name=cache.name, create=False)
    assert not other.is_owner
    other.close()
    assert os.path.exists(shm_path(cache.name))
    assert cache.get_many([entry[0]]) == [entry[1]]


def test_pickle_carries_the_name_and_attaches(cache: SharedMemoryCache) -> None:
    entry = item(9, payload(9, 4000))
    cache.put_many([entry])
    blob = pickle.dumps(cache)
    assert len(blob) < 200  # the name, not the bytes
    clone = pickle.loads(blob)
    assert clone.name == cache.name and not clone.is_owner
    assert clone.get_many([entry[0]]) == [entry[1]]
    clone.close()


def test_attach_checks_what_it_is_given(cache: SharedMemoryCache) -> None:
    with pytest.raises(HotsetError, match="capacity_bytes=10000"):
        SharedMemoryCache(5000, name=cache.name, create=False)
    with pytest.raises(HotsetError, match="n_slots=64"):
        SharedMemoryCache(name=cache.name, create=False, n_slots=65)
    same = SharedMemoryCache("10kb", n_slots=64, name=cache.name, create=False)
    assert same.capacity_bytes == 10_000
    same.close()
    with pytest.raises(HotsetError, match="already exists"):
        SharedMemoryCache(1000, n_slots=4, name=cache.name)


def test_a_foreign_segment_is_not_mistaken_for_a_cache() -> None:
    raw = shared_memory.SharedMemory(create=True, size=4096)
    try:
        with pytest.raises(HotsetError, match="not a hotset cache"):
            SharedMemoryCache(name=raw.name, create=False)
    finally:
        raw.close()
        raw.unlink()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"capacity_bytes": 1000, "n_slots": 0}, "n_slots must be a positive int"),
        ({"capacity_bytes": 1000, "n_slots": True}, "n_slots"),
        ({"capacity_bytes": -1, "n_slots": 4}, "capacity_bytes"),
        ({"capacity_bytes": "lots", "n_slots": 4}, "capacity_bytes"),
        ({"n_slots": 4}, "capacity_bytes is required"),
        ({"capacity_bytes": 10, "n_slots": 4, "arena_slack": -0.5}, "arena_slack"),
        ({"capacity_bytes": 10, "n_slots": 4, "name": "a/b"}, "name must be"),
        ({"create": False}, "needs the segment name"),
    ],
)
def test_bad_construction_is_named(kwargs: dict, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        SharedMemoryCache(**kwargs)


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ((64, "0" * 16), "out of range for a cache of 64 slots"),
        ((-1, "0" * 16), "non-negative"),
        ((1, "ABCDEF0123456789"), "16 lowercase hex"),
        ((1, "abc"), "16 lowercase hex"),
        ("nope", "sample_id, content_hash"),
    ],
)
def test_bad_keys_are_named(cache: SharedMemoryCache, key: object, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        cache.get_many([key])  # type: ignore[list-item]
    with pytest.raises(HotsetError, match=match):
        cache.put_many([(key, b"x")])  # type: ignore[list-item]


def test_put_rejects_non_bytes(cache: SharedMemoryCache) -> None:
    with pytest.raises(HotsetError, match="data must be bytes, got str"):
        cache.put_many([(CacheKey(0, content_hash(b"x")), "x")])  # type: ignore[list-item]


def test_index_overhead_is_documented_and_bounded() -> None:
    assert index_overhead_bytes(1000) == 128 + 32 * 1000 + 16 * 1001
    assert index_overhead_bytes(10**6) == 128 + 32 * 10**6 + 16 * (1 << 16)
    with SharedMemoryCache(1000, n_slots=1000) as cache:
        assert index_overhead_bytes(1000) <= cache.index_bytes < index_overhead_bytes(1000) + 64
        assert cache.arena_bytes == 1250  # default slack 0.25


def test_threads_writing_through_two_handles_do_not_corrupt() -> None:
    with SharedMemoryCache(200_000, n_slots=200, arena_slack=0) as owner:
        other = SharedMemoryCache(name=owner.name, create=False)
        batches = {
            h: [item(i, payload(i, 100 + 7 * i)) for i in range(start, 200, 2)]
            for h, start in ((0, 0), (1, 1))
        }

        def churn(handle: SharedMemoryCache, entries: list[tuple[CacheKey, bytes]]) -> None:
            for _ in range(5):
                for j in range(0, len(entries), 10):
                    handle.put_many(entries[j : j + 10])
                handle.delete_many([k for k, _ in entries[::3]])

        threads = [
            threading.Thread(target=churn, args=(h, batches[n]))
            for n, h in enumerate((owner, other))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        expected = {k: d for entries in batches.values() for k, d in entries}
        for entries in batches.values():
            for k, _ in entries[::3]:
                del expected[k]
        assert owner.get_many(list(expected)) == list(expected.values())
        assert owner.used_bytes() == sum(map(len, expected.values()))
        check_layout(owner)
        other.close()


def test_a_counter_that_moves_during_the_copy_sends_the_read_round_again(
    cache: SharedMemoryCache,
) -> None:
    # White-box: a writer that touched the slot while its bytes were copied shows
    # up as a changed counter on the second look; the copy is discarded and redone.
    (k0, d0), (k1, d1) = item(0, payload(0, 500)), item(1, payload(1, 700))
    cache.put_many([(k0, d0), (k1, d1)])
    real = shm_index.U64
    looks: list[int] = []

    class MovedOnce:
        def unpack_from(self, buf: memoryview, offset: int) -> tuple[int]:
            (seq,) = real.unpack_from(buf, offset)
            looks.append(offset)
            return (seq + 2,) if len(looks) == 1 else (seq,)

    with mock.patch.object(shm_index, "U64", MovedOnce()):
        assert cache.get_many([k0, k1]) == [d0, d1]
    assert len(looks) == 3  # k0 twice (moved, then settled), k1 once
    assert cache.stats().hits == 2


def test_a_slot_left_mid_write_is_a_miss_after_a_bounded_wait(cache: SharedMemoryCache) -> None:
    (k0, d0), (k1, d1) = item(0, payload(0, 500)), item(1, payload(1, 700))
    cache.put_many([(k0, d0), (k1, d1)])
    slots = cache._seg.slots
    slots[0, 0] += np.uint64(1)  # odd: a writer (alive, as far as we know) is on it
    started = time.monotonic()
    assert cache.get_many([k0, k1]) == [None, d1]
    assert not cache.contains(k0)
    assert time.monotonic() - started < 5
    slots[0, 0] += np.uint64(1)  # the write settles
    assert cache.get_many([k0]) == [d0]
    assert cache.contains(k0)


def test_an_extent_reaching_past_the_arena_is_a_miss_never_short_bytes(
    cache: SharedMemoryCache,
) -> None:
    # No writer makes such an extent; a damaged index must still not serve a
    # truncated sample as if it were the whole one.
    key, data = item(3, payload(3, 400))
    cache.put_many([(key, data)])
    cache._seg.slots[3, 1] = cache.arena_bytes - 100
    assert cache.get_many([key]) == [None]
    assert not cache.contains(key)
    assert cache.stats().misses == 1
