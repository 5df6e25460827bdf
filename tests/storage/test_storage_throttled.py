"""ThrottledStore: validation, the virtual clock against analytic makespans, threads."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.storage import StatsCounter, Store, StoreStats, ThrottledStore


class DictStore:
    """The smallest honest inner store: bytes in a dict, counted."""

    def __init__(self, items: dict[str, bytes]) -> None:
        self._items = dict(items)
        self._stats = StatsCounter()

    def read(self, key: str) -> bytes:
        data = self._items[key]
        self._stats.add_read(len(data), 0.0)
        return data

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        return [self.read(k) for k in keys]

    def size(self, key: str) -> int:
        return len(self._items[key])

    def write(self, key: str, data: bytes) -> None:
        self._items[key] = bytes(data)
        self._stats.add_write(len(data), 0.0)

    def exists(self, key: str) -> bool:
        return key in self._items

    def list_keys(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def stats(self) -> StoreStats:
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        self._stats.reset()


def _samples(sizes: Sequence[int]) -> tuple[DictStore, list[str]]:
    keys = [f"k{i}" for i in range(len(sizes))]
    return DictStore({k: bytes(s) for k, s in zip(keys, sizes, strict=True)}), keys


def _virtual(inner: Store, *, latency_ms: float, bandwidth_mb_s: float, c: int) -> ThrottledStore:
    return ThrottledStore(
        inner,
        latency_ms=latency_ms,
        bandwidth_mb_s=bandwidth_mb_s,
        max_concurrency=c,
        clock="virtual",
    )


# -- validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "culprit"),
    [
        ({"latency_ms": -1.0}, "latency_ms.*-1.0"),
        ({"latency_ms": float("nan")}, "latency_ms.*nan"),
        ({"latency_ms": math.inf}, "latency_ms.*inf"),
        ({"latency_ms": "2ms"}, "latency_ms.*'2ms'"),
        ({"bandwidth_mb_s": 0}, "bandwidth_mb_s.*0"),
        ({"bandwidth_mb_s": -10.0}, "bandwidth_mb_s.*-10.0"),
        ({"bandwidth_mb_s": True}, "bandwidth_mb_s.*True"),
        ({"max_concurrency": 0}, "max_concurrency.*0"),
        ({"max_concurrency": 2.5}, "max_concurrency.*2.5"),
        ({"max_concurrency": True}, "max_concurrency.*True"),
        ({"clock": "wall"}, "clock.*'wall'"),
    ],
)
def test_bad_options_name_the_bad_value(options: dict[str, object], culprit: str) -> None:
    inner, _ = _samples([1])
    with pytest.raises(HotsetError, match=culprit):
        ThrottledStore(inner, **options)  # type: ignore[arg-type]


def test_inner_must_be_a_store() -> None:
    with pytest.raises(HotsetError, match="inner: expected a Store"):
        ThrottledStore(object())  # type: ignore[arg-type]


def test_clock_controls_need_the_virtual_clock() -> None:
    inner, _ = _samples([1])
    store = ThrottledStore(inner, clock="real")
    with pytest.raises(HotsetError, match=r"advance.*clock='real'"):
        store.advance(1.0)
    with pytest.raises(HotsetError, match=r"sync.*clock='real'"):
        store.sync()
    virtual = ThrottledStore(inner, clock="virtual")
    with pytest.raises(HotsetError, match="-1"):
        virtual.advance(-1)


# -- the virtual clock against analytic values --------------------------------------


@pytest.mark.parametrize(("n", "c"), [(1, 1), (10, 1), (10, 4), (12, 4), (7, 16), (2000, 4)])
def test_latency_bound_makespan_is_waves_times_latency(n: int, c: int) -> None:
    inner, keys = _samples([0] * n)
    store = _virtual(inner, latency_ms=2.0, bandwidth_mb_s=1.0, c=c)
    store.read_many(keys)
    assert store.modeled_seconds == pytest.approx(math.ceil(n / c) * 0.002, rel=1e-9)
    stats = store.stats()
    assert stats.reads == n
    assert stats.seconds == pytest.approx(n * 0.002, rel=1e-9)


def test_single_reads_issued_together_match_a_batch() -> None:
    inner, keys = _samples([0] * 9)
    store = _virtual(inner, latency_ms=5.0, bandwidth_mb_s=1.0, c=2)
    for key in keys:
        store.read(key)
    assert store.modeled_seconds == pytest.approx(5 * 0.005, rel=1e-9)


@pytest.mark.parametrize("c", [1, 3, 64])
def test_bandwidth_bound_makespan_is_bytes_over_bandwidth(c: int) -> None:
    sizes = [1000, 250_000, 7, 40_000, 40_000]
    inner, keys = _samples(sizes)
    store = _virtual(inner, latency_ms=0.0, bandwidth_mb_s=2.0, c=c)
    store.read_many(keys)
    assert store.modeled_seconds == pytest.approx(sum(sizes) / 2e6, rel=1e-9)
    assert store.stats().bytes_read == sum(sizes)


def test_one_lane_pays_latency_and_transfer_for_each_request() -> None:
    sizes = [10_000, 30_000, 0]
    inner, keys = _samples(sizes)
    store = _virtual(inner, latency_ms=3.0, bandwidth_mb_s=10.0, c=1)
    store.read_many(keys)
    assert store.modeled_seconds == pytest.approx(3 * 0.003 + sum(sizes) / 1e7, rel=1e-9)


def test_advance_and_sync_move_the_issue_time() -> None:
    inner, keys = _samples([0] * 8)
    store = _virtual(inner, latency_ms=10.0, bandwidth_mb_s=1.0, c=4)
    store.read_many(keys[:4])  # 0 .. 10 ms
    assert store.advance(0.004) == pytest.approx(0.004)
    store.read(keys[4])  # prefetch while computing: lanes busy until 10 ms
    assert store.modeled_seconds == pytest.approx(0.020)
    assert store.sync() == pytest.approx(0.020)
    store.advance(1.0)  # compute after the batch landed
    store.read_many(keys[5:])  # issued at 1.020 on idle lanes
    assert store.modeled_seconds == pytest.approx(1.030)
    assert store.now == pytest.approx(1.020)
    # Service time runs from lane start to finish: queueing for a lane is not service.
    assert store.stats().seconds == pytest.approx(8 * 0.010)


def test_reads_are_counted_once_and_the_inner_store_keeps_its_own_count() -> None:
    inner, keys = _samples([100, 200, 300])
    store = _virtual(inner, latency_ms=1.0, bandwidth_mb_s=1.0, c=2)
    store.read(keys[0])
    store.read_many(keys)
    stats = store.stats()
    assert (stats.reads, stats.bytes_read) == (4, 700)
    assert (inner.stats().reads, inner.stats().bytes_read) == (4, 700)
    assert store.size(keys[2]) == 300 and store.exists(keys[1]) and not store.exists("nope")
    assert list(store.list_keys()) == keys
    assert store.stats().reads == 4  # metadata is not throttled or counted


def test_writes_are_throttled_and_counted() -> None:
    inner, _ = _samples([])
    store = _virtual(inner, latency_ms=1.0, bandwidth_mb_s=1.0, c=1)
    store.write("w", b"x" * 1000)
    assert inner.read("w") == b"x" * 1000
    stats = store.stats()
    assert (stats.writes, stats.bytes_written, stats.reads) == (1, 1000, 0)
    assert store.modeled_seconds == pytest.approx(0.001 + 1000 / 1e6)


def test_reset_stats_keeps_the_clock_and_reset_clock_keeps_the_stats() -> None:
    inner, keys = _samples([0, 0])
    store = _virtual(inner, latency_ms=1.0, bandwidth_mb_s=1.0, c=1)
    store.read_many(keys)
    store.reset_stats()
    assert store.stats() == StoreStats()
    assert store.modeled_seconds == pytest.approx(0.002)
    store.read(keys[0])
    store.reset_clock()
    assert store.modeled_seconds == 0.0 and store.now == 0.0
    assert store.stats().reads == 1


# -- threads ---------------------------------------------------------------------


def _from_threads(store: ThrottledStore, keys: list[str], threads: int) -> int:
    barrier = threading.Barrier(threads)

    def worker(share: list[str]) -> int:
        barrier.wait()
        return sum(len(store.read(k)) for k in share)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return sum(pool.map(worker, [keys[i::threads] for i in range(threads)]))


def test_virtual_counts_and_makespan_are_exact_under_eight_threads() -> None:
    n = 2000
    inner, keys = _samples([0] * n)
    store = _virtual(inner, latency_ms=2.0, bandwidth_mb_s=1.0, c=4)
    _from_threads(store, keys, threads=8)
    assert store.stats().reads == n
    assert store.modeled_seconds == pytest.approx(math.ceil(n / 4) * 0.002, rel=1e-9)
    assert store.stats().seconds == pytest.approx(n * 0.002, rel=1e-9)


def test_virtual_byte_counts_are_exact_under_eight_threads() -> None:
    sizes = [i % 97 for i in range(800)]
    inner, keys = _samples(sizes)
    store = _virtual(inner, latency_ms=0.0, bandwidth_mb_s=5.0, c=3)
    assert _from_threads(store, keys, threads=8) == sum(sizes)
    assert store.stats().bytes_read == sum(sizes)
    assert store.modeled_seconds == pytest.approx(sum(sizes) / 5e6, rel=1e-9)


def test_real_clock_takes_at_least_the_latency_bound_from_threads() -> None:
    n, c, latency_ms = 200, 4, 2.0
    inner, keys = _samples([64] * n)
    store = ThrottledStore(
        inner, latency_ms=latency_ms, bandwidth_mb_s=1000.0, max_concurrency=c, clock="real"
    )
    start = time.perf_counter()
    total = _from_threads(store, keys, threads=8)
    wall = time.perf_counter() - start
    assert wall >= math.ceil(n / c) * latency_ms / 1000  # 0.1 s; sleeping never undershoots
    assert total == store.stats().bytes_read == 64 * n
    assert store.stats().reads == n
    assert store.stats().seconds >= n * latency_ms / 1000


def test_real_clock_batch_from_one_thread_uses_all_lanes() -> None:
    inner, keys = _samples([0] * 40)
    store = ThrottledStore(inner, latency_ms=5.0, max_concurrency=8, clock="real")
    start = time.perf_counter()
    store.read_many(keys)
    assert time.perf_counter() - start >= 5 * 0.005
    assert store.stats().reads == 40


# -- the model's bounds, for any workload --------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 2_000_000), min_size=1, max_size=40),
    latency_ms=st.floats(0.0, 20.0),
    bandwidth_mb_s=st.floats(0.5, 5000.0),
    c=st.integers(1, 9),
    batch=st.booleans(),
)
def test_virtual_makespan_respects_latency_bandwidth_and_lane_bounds(
    sizes: list[int], latency_ms: float, bandwidth_mb_s: float, c: int, batch: bool
) -> None:
    inner, keys = _samples(sizes)
    store = _virtual(inner, latency_ms=latency_ms, bandwidth_mb_s=bandwidth_mb_s, c=c)
    if batch:
        store.read_many(keys)
    else:
        for key in keys:
            store.read(key)
    n, latency, transfer = len(sizes), latency_ms / 1000, sum(sizes) / (bandwidth_mb_s * 1e6)
    makespan = store.modeled_seconds
    slack = 1e-9 * (1 + makespan)
    assert makespan + slack >= max(n * latency / c, math.ceil(n / c) * latency, transfer)
    assert makespan <= n * latency + transfer + slack
    service = store.stats().seconds
    # Never more than c requests in service at once, each for at least the latency.
    assert n * latency - slack <= service <= c * makespan + slack
