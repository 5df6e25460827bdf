"""The tuned PyTorch baseline keeps the store's requests in flight; the untuned one cannot."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from hotset.bench.loader import LoaderBenchOptions, run
from hotset.bench.torch_baseline import PlainDataset, dataloader, tuned, untuned
from hotset.errors import HotsetError
from hotset.storage.presets import StoreModel


class CountingStore:
    """Bytes after a short sleep, counting the most reads ever in flight at once.

    Picklable (a worker gets a copy): the counts then live in the worker, so the
    tests that count use workers=0, where the pool runs in this process."""

    def __init__(self, n: int, *, sleep_s: float = 0.01) -> None:
        self.n, self.sleep_s = n, sleep_s
        self.now = self.most = 0
        self.lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        return {"n": self.n, "sleep_s": self.sleep_s, "now": 0, "most": 0}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.lock = threading.Lock()

    def read(self, key: str) -> bytes:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.sleep_s)
        with self.lock:
            self.now -= 1
        return key.encode()


def _epoch(store: CountingStore, threads: int, workers: int) -> list[bytes]:
    keys = [f"k{i:03d}" for i in range(store.n)]
    ds = PlainDataset(store, keys, np.zeros(store.n, dtype=np.int64), decode=False, threads=threads)
    how = tuned(threads, workers=workers, io_threads=1) if threads > 1 else untuned(workers=workers)
    out: list[bytes] = []
    try:
        for x, _y in dataloader(ds, how, batch_size=16, seed=0):
            out += list(x)
    finally:
        ds.close()
    return out


def test_tuned_sizes_threads_to_the_store_and_never_below_hotsets_io_threads() -> None:
    assert tuned(8, workers=4, io_threads=1).threads_per_worker == 2
    assert tuned(8, workers=4, io_threads=8).threads_per_worker == 8
    assert tuned(16, workers=3, io_threads=2).threads_per_worker == 6
    assert tuned(4, workers=0, io_threads=1).requests_in_flight == 4  # the main process reads
    b = tuned(32, workers=4, io_threads=8)
    assert b.requests_in_flight == 32
    assert b.fields(32) == {
        "workers": 4,
        "threads_per_worker": 8,
        "requests_in_flight": 32,
        "prefetch_factor": 2,
        "pin_memory": False,
        "store_max_in_flight": 32,
    }
    assert untuned(workers=4).requests_in_flight == 4


def test_the_tuned_dataset_keeps_many_reads_in_flight_and_the_untuned_one_one() -> None:
    store = CountingStore(64)
    got = _epoch(store, threads=8, workers=0)
    assert sorted(got) == sorted(f"k{i:03d}".encode() for i in range(64))  # each sample once
    assert store.most >= 6  # 16 per batch on 8 threads: the pool overlaps them
    plain = CountingStore(32)
    assert len(_epoch(plain, threads=1, workers=0)) == 32
    assert plain.most == 1


def test_workers_read_every_sample_once_through_their_own_pools() -> None:
    got = _epoch(CountingStore(48, sleep_s=0.001), threads=4, workers=2)
    assert sorted(got) == sorted(f"k{i:03d}".encode() for i in range(48))


def test_bad_baselines_are_named() -> None:
    with pytest.raises(HotsetError, match="store_in_flight"):
        tuned(0, workers=1, io_threads=1)
    with pytest.raises(HotsetError, match="threads"):
        PlainDataset(None, [], np.zeros(0), threads=0)


def test_the_loader_bench_torch_row_states_its_requests_in_flight_and_untuned_is_labelled() -> None:
    result = run(
        LoaderBenchOptions(
            n=128, epochs=1, workers=2, batch_size=32, compute_ms=0.0, image_size=8,
            systems=("pytorch",), io_threads=2, torch_untuned=True,
        ),
        store=StoreModel(latency_ms=1.0, bandwidth_mb_s=math.inf, max_concurrency=6),
    )  # fmt: skip
    rows = {row["name"]: row for row in result["table"]}
    assert list(rows) == ["torch", "torch-untuned", "pytorch", "no-io"]
    assert rows["torch"]["requests_in_flight"] >= 6 == rows["torch"]["store_max_in_flight"]
    assert rows["torch"]["threads_per_worker"] == 3
    assert rows["torch-untuned"]["requests_in_flight"] == 2
    assert rows["pytorch"]["requests_in_flight"] == 4
    assert result["params"]["torch"]["requests_in_flight"] >= 6
    assert any("tuned" in note for note in result["notes"])
