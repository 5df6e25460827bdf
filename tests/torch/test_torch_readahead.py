"""Read-ahead: bounded, never reads an id twice, counts every read, and changes no decision."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_support import run_epoch

import hotset
from hotset.errors import HotsetError
from hotset.torch.readahead import ReadAhead


class _Reads:
    """A fake store: the bytes of id i are ``bytes([i % 251]) * size``; every call counted."""

    def __init__(self, sizes: np.ndarray, *, delay_s: float = 0.0, fail: set[int] | None = None):
        self.sizes = sizes
        self.delay_s = delay_s
        self.fail = fail or set()
        self.calls: Counter[int] = Counter()
        self._lock = threading.Lock()

    def __call__(self, sid: int) -> bytes:
        with self._lock:
            self.calls[sid] += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        if sid in self.fail:
            raise OSError(f"cannot read {sid}")
        return bytes([sid % 251]) * int(self.sizes[sid])


def _drive(
    ra: ReadAhead, order: np.ndarray, batch: int, hits: set[int], reads: _Reads
) -> dict[int, bytes]:
    """Play the planner: each batch asks for its misses (ids not in ``hits``)."""
    got: dict[int, bytes] = {}
    for start in range(0, len(order), batch):
        ids = [s for s in dict.fromkeys(order[start : start + batch].tolist()) if s not in hits]
        staged = ra.take(ids, frontier=min(start + batch, len(order)))
        assert set(staged) <= set(ids)
        for sid, data in staged.items():
            assert data == bytes([sid % 251]) * int(reads.sizes[sid])
            assert sid not in got
        got.update(staged)
        if reads.delay_s:
            time.sleep(reads.delay_s / 2)  # "compute", so read-ahead gets ahead
    ra.stop()
    return got


def test_reads_ahead_within_budget_and_hands_over() -> None:
    sizes = np.full(60, 100, dtype=np.int64)
    order = np.random.default_rng(0).permutation(60)
    reads = _Reads(sizes, delay_s=0.002)
    ra = ReadAhead(reads, sizes, budget_bytes=500, threads=3, max_miss_share=1.0)
    ra.start(order, begin=0, skip=())
    got = _drive(ra, order, 6, set(), reads)
    assert len(got) > 30  # it got ahead of most batches
    assert ra.max_held_bytes <= 500
    assert max(reads.calls.values()) == 1  # never read twice
    c = ra.counts
    assert c.reads == sum(reads.calls.values()) == c.used + c.wasted
    assert c.used == len(got) and c.wasted == 0


def test_skips_cached_and_planned_ids_and_counts_waste() -> None:
    sizes = np.full(20, 10, dtype=np.int64)
    order = np.arange(20)
    reads = _Reads(sizes)
    ra = ReadAhead(reads, sizes, budget_bytes=10_000, threads=2, max_miss_share=1.0)
    ra.start(order, begin=4, skip={7, 8})
    deadline = time.monotonic() + 5
    while ra.counts.reads < 14 and time.monotonic() < deadline:
        time.sleep(0.005)
    # positions 0..3 were planned already and 7, 8 are cached: never read ahead
    assert set(reads.calls) == set(range(4, 20)) - {7, 8}
    # the plan of positions 4..11 finds 5 and 6 hits: their reads are wasted, and said so
    staged = ra.take([4, 9, 10, 11], frontier=12)
    assert sorted(staged) == [4, 9, 10, 11]
    assert ra.counts.wasted == 2 and ra.counts.wasted_bytes == 20
    ra.stop()  # 12..19 staged, never asked for
    assert ra.counts.wasted == 2 + 8
    assert ra.counts.reads == ra.counts.used + ra.counts.wasted


def test_failed_read_is_left_to_the_worker() -> None:
    sizes = np.full(10, 10, dtype=np.int64)
    order = np.arange(10)
    reads = _Reads(sizes, fail={3})
    ra = ReadAhead(reads, sizes, budget_bytes=1000, threads=1, max_miss_share=1.0)
    ra.start(order, begin=0, skip=())
    got = _drive(ra, order, 5, set(), reads)
    assert 3 not in got and len(got) == 9
    assert ra.counts.reads == 9 and ra.counts.wasted == 0


def test_disabled_reads_nothing() -> None:
    sizes = np.full(10, 10, dtype=np.int64)
    reads = _Reads(sizes)
    ra = ReadAhead(reads, sizes, budget_bytes=0, threads=2)
    ra.start(np.arange(10), begin=0, skip=())
    assert ra.take([1, 2], frontier=5) == {}
    ra.stop()
    assert not reads.calls and ra.counts.reads == 0


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    draws=st.integers(1, 80),
    budget=st.integers(1, 400),
    batch=st.integers(1, 9),
    threads=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_invariants(n: int, draws: int, budget: int, batch: int, threads: int, seed: int) -> None:
    """Any order (repeats too), budget and hit pattern: bounded, no double read, all counted."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 20, n).astype(np.int64)
    order = rng.integers(0, n, draws).astype(np.int64)
    skip = set(rng.choice(n, size=n // 4, replace=False).tolist()) if n >= 4 else set()
    hits = set(rng.choice(n, size=n // 3, replace=False).tolist()) if n >= 3 else set()
    reads = _Reads(sizes)
    ra = ReadAhead(reads, sizes, budget_bytes=budget, threads=threads, max_miss_share=1.0)
    ra.start(order, begin=0, skip=skip)
    got = _drive(ra, order, batch, hits, reads)
    assert not (set(reads.calls) & skip)
    assert max(reads.calls.values(), default=0) <= 1
    assert ra.max_held_bytes <= max(budget, int(sizes.max()))
    c = ra.counts
    assert c.reads == sum(reads.calls.values()) == c.used + c.wasted
    assert c.used == len(got)


def test_idle_when_most_of_the_epoch_misses() -> None:
    """An all-miss epoch is left to the DataLoader's window; a mostly cached one is read ahead."""
    sizes = np.full(100, 10, dtype=np.int64)
    order = np.arange(100)
    assert ReadAhead.miss_share(order, 10, set(range(50, 100))) == pytest.approx(40 / 90)
    reads = _Reads(sizes)
    ra = ReadAhead(reads, sizes, budget_bytes=10_000, threads=2)  # max_miss_share 0.5
    ra.start(order, begin=0, skip=set(range(40)))  # 60% uncached
    assert not ra.active
    assert ra.take([50, 51], frontier=52) == {}
    ra.stop()
    assert not reads.calls
    ra.start(order, begin=0, skip=set(range(60)))  # 40% uncached
    assert ra.active
    got = _drive(ra, order, 10, set(), reads)
    assert set(reads.calls) == set(range(60, 100)) and len(got) > 0


def test_bad_arguments() -> None:
    sizes = np.ones(3, dtype=np.int64)
    with pytest.raises(ValueError, match="budget_bytes"):
        ReadAhead(lambda s: b"", sizes, budget_bytes=-1, threads=1)
    with pytest.raises(ValueError, match="threads"):
        ReadAhead(lambda s: b"", sizes, budget_bytes=1, threads=0)
    with pytest.raises(ValueError, match="max_miss_share"):
        ReadAhead(lambda s: b"", sizes, budget_bytes=1, threads=1, max_miss_share=1.5)


# -- in the loader -------------------------------------------------------------------------
def _epochs(dataset_dir: Path, *, workers: int, readahead: int | None, epochs: int = 3):
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with hotset.loader(
        data,
        system="shade",
        cache=0.2,  # epochs after the first mostly hit, some miss: read-ahead has work
        batch_size=16,
        num_workers=workers,
        readahead_bytes=readahead,
        verify=True,
    ) as loader:
        out = []
        for epoch in range(epochs):
            batches = run_epoch(loader, epoch)
            out.append((loader.decisions().rows(), batches))
        return out, loader.report()


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_same_decisions_and_bytes_with_or_without(dataset_dir: Path, workers: int) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    store_bytes = [data.store.read(k) for k in data.manifest.keys]
    with_ra, rows = _epochs(dataset_dir, workers=workers, readahead=None)
    without, rows_off = _epochs(dataset_dir, workers=workers, readahead=0)
    for (log_a, batches_a), (log_b, batches_b) in zip(with_ra, without, strict=True):
        assert log_a == log_b  # read-ahead moves bytes, it decides nothing
        for (x, _, ids, _), (x2, _, ids2, _) in zip(batches_a, batches_b, strict=True):
            assert torch.equal(ids, ids2)
            assert x == x2 == [store_bytes[i] for i in ids.tolist()]
    assert sum(r["readahead_reads"] for r in rows) > 0
    assert all(r["readahead_reads"] == 0 for r in rows_off)
    for on, off in zip(rows, rows_off, strict=True):
        # every read counted once: the workers' plus read-ahead's, wasted ones included
        assert on["storage_requests"] == off["storage_requests"] + on["readahead_wasted"]
        assert on["staged_reads"] == on["readahead_reads"] - on["readahead_wasted"]


def test_loader_rejects_bad_budget(dataset_dir: Path) -> None:
    with pytest.raises(HotsetError, match="readahead_bytes"):
        hotset.loader(dataset_dir, system="lru", cache=0.3, readahead_bytes="lots")
