"""Ranged reads (hotset.storage.ranges) on real files: bytes, counters, models, errors."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import fsspec
import pytest

from hotset.errors import HotsetError
from hotset.storage import FsspecStore, LocalStore, RetryingStore, ThrottledStore
from hotset.storage.ranges import coalesce, read_ranges
from hotset.storage.shared_throttle import SharedThrottledStore

BLOB = os.urandom(10_000)
RANGES = [(9_000, 500), (0, 10), (100, 0), (4_000, 1_000), (9_990, 50)]  # last runs past the end
WANT = [BLOB[o : o + n] for o, n in RANGES]


def _local(tmp_path: Path) -> LocalStore:
    store = LocalStore(tmp_path / "root", create=True)
    store.write("chunks/c0.bin", BLOB)
    store.reset_stats()
    return store


def test_local_reads_a_vector_of_ranges_in_one_request(tmp_path: Path) -> None:
    store = _local(tmp_path)
    got = store.read_ranges("chunks/c0.bin", RANGES)
    assert got == WANT
    assert len(got[-1]) == 10  # past the end: what the file holds, as pread returns
    stats = store.stats()
    assert (stats.reads, stats.bytes_read) == (1, sum(map(len, WANT)))


def test_local_ranged_read_keeps_the_root_and_missing_key_rules(tmp_path: Path) -> None:
    store = _local(tmp_path)
    with pytest.raises(HotsetError, match="no such key 'nope'"):
        store.read_ranges("nope", [(0, 1)])
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"secret")
    (tmp_path / "root" / "link.bin").symlink_to(outside)
    with pytest.raises(HotsetError, match="leads outside the store root"):
        store.read_ranges("link.bin", [(0, 3)])


@pytest.mark.parametrize("bad", [[(-1, 3)], [(0, -2)], [(0,)], [(True, 2)], [(0.5, 2)], ["ab"]])
def test_bad_ranges_are_refused_naming_the_range(tmp_path: Path, bad: list) -> None:  # type: ignore[type-arg]
    store = _local(tmp_path)
    with pytest.raises(HotsetError, match=r"ranged read of 'chunks/c0\.bin'"):
        store.read_ranges("chunks/c0.bin", bad)
    assert store.stats().reads == 0


@pytest.mark.parametrize("kind", ["memory", "file", "async"])
def test_fsspec_counts_one_request_per_coalesced_range(tmp_path: Path, kind: str) -> None:
    root = f"/hotset-ranges-{uuid.uuid4().hex}"
    url = {
        "memory": f"memory://{root}",
        "file": f"file://{tmp_path}/root",
        "async": f"async_wrapper::memory://{root}",
    }[kind]
    store = FsspecStore(url, create=True)
    try:
        store.write("c.bin", BLOB)
        store.reset_stats()
        got = store.read_ranges("c.bin", [*RANGES, (10, 90)])  # (0,10)+(10,90)+(100,0) touch
        assert got == [*WANT, BLOB[10:100]]
        stats = store.stats()
        assert stats.reads == len(coalesce([*RANGES, (10, 90)])) == 4
        with pytest.raises(HotsetError, match="no such key"):
            store.read_ranges("missing.bin", [(0, 4)])
    finally:
        mem = fsspec.filesystem("memory")
        if mem.exists(root):
            mem.rm(root, recursive=True)


def test_throttled_models_charge_one_latency_for_the_vector(tmp_path: Path) -> None:
    store = ThrottledStore(
        _local(tmp_path), latency_ms=10.0, bandwidth_mb_s=1.0, max_concurrency=4, clock="virtual"
    )
    nbytes = sum(map(len, WANT))
    assert store.read_ranges("chunks/c0.bin", RANGES) == WANT
    assert store.sync() == pytest.approx(0.010 + nbytes / 1e6)
    stats = store.stats()
    assert (stats.reads, stats.bytes_read) == (1, nbytes)
    # the same bytes as one request per sample would pay one latency each on one lane
    single = ThrottledStore(
        _local(tmp_path), latency_ms=10.0, bandwidth_mb_s=1.0, max_concurrency=1, clock="virtual"
    )
    for offset, length in RANGES:
        single.read_ranges("chunks/c0.bin", [(offset, length)])
    assert single.sync() > store.now + 0.035


def test_shared_throttle_and_retries_pass_ranged_reads_through(tmp_path: Path) -> None:
    shared = SharedThrottledStore(_local(tmp_path), latency_ms=1.0, max_concurrency=2)
    retrying = RetryingStore(shared, retries=1)
    assert retrying.read_ranges("chunks/c0.bin", RANGES) == WANT
    nbytes = sum(map(len, WANT))
    assert (shared.stats().reads, shared.stats().bytes_read) == (1, nbytes)
    assert (retrying.stats().reads, retrying.stats().bytes_read) == (1, nbytes)
    with pytest.raises(HotsetError):
        retrying.read_ranges("nope.bin", [(0, 1)])


class _PlainStore:
    """A store without a ranged read: the fallback reads the whole file (counted whole)."""

    def __init__(self) -> None:
        self.reads = 0

    def read(self, key: str) -> bytes:
        self.reads += 1
        return BLOB


def test_a_store_without_ranged_reads_is_read_whole_and_sliced() -> None:
    plain = _PlainStore()
    assert read_ranges(plain, "any", RANGES) == WANT
    assert plain.reads == 1
    with pytest.raises(HotsetError, match="not a store"):
        read_ranges(object(), "k", [(0, 1)])
