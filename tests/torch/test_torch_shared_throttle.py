"""The cross-process throttle: one modeled server for every worker process of a job."""

from __future__ import annotations

import multiprocessing
import pickle
import time
from pathlib import Path

import pytest

from hotset.errors import HotsetError
from hotset.storage.local import LocalStore
from hotset.storage.shared_throttle import SharedThrottledStore


def _reader(store: SharedThrottledStore, keys: list[str]) -> None:
    for key in keys:
        assert store.read(key) == key.encode()


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    for i in range(40):
        (tmp_path / f"k{i}").write_bytes(f"k{i}".encode())
    return tmp_path


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_concurrency_is_global_across_processes(store_dir: Path, context: str) -> None:
    """4 processes x 10 reads of 20 ms through 2 lanes take >= 400 ms, not the 100 ms
    four private 2-lane throttles would take."""
    store = SharedThrottledStore(
        LocalStore(store_dir), latency_ms=20.0, max_concurrency=2, context=context
    )
    ctx = multiprocessing.get_context(context)
    procs = [
        ctx.Process(target=_reader, args=(store, [f"k{10 * p + i}" for i in range(10)]))
        for p in range(4)
    ]
    start = time.monotonic()
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert time.monotonic() - start >= 40 * 0.020 / 2 - 0.01
    assert store.modeled_seconds >= 40 * 0.020 / 2 - 1e-6
    # the booked schedule is shared: the parent's next read queues behind every worker's
    t0 = time.monotonic()
    store.read("k0")
    assert time.monotonic() - t0 >= 0.019


def test_one_process_read_many_overlaps_lanes(store_dir: Path) -> None:
    store = SharedThrottledStore(LocalStore(store_dir), latency_ms=20.0, max_concurrency=4)
    t0 = time.monotonic()
    assert store.read_many([f"k{i}" for i in range(8)]) == [f"k{i}".encode() for i in range(8)]
    took = time.monotonic() - t0
    assert 0.039 <= took < 0.5  # two rounds of four, not eight in a row
    assert store.stats().reads == 8


def test_pickles_only_while_spawning_and_checks_arguments(store_dir: Path) -> None:
    store = SharedThrottledStore(LocalStore(store_dir), latency_ms=1.0)
    with pytest.raises(RuntimeError):  # shared state travels by inheritance only
        pickle.dumps(store)
    with pytest.raises(HotsetError, match="max_concurrency"):
        SharedThrottledStore(LocalStore(store_dir), max_concurrency=0)
    with pytest.raises(HotsetError, match="latency_ms"):
        SharedThrottledStore(LocalStore(store_dir), latency_ms=-1.0)
