"""Quiver's probe through the real loader (§5.3): the cache's worth to a job, measured.

A job that waits on storage runs several times faster from the cache; one whose
training step hides its reads does not, and the placement gives it no space.
The contrast is made large (a 4 ms store read per sample against no compute, and
against 150 ms of compute with reads overlapped by workers) so that a loaded
machine cannot turn it around.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import hotset
from hotset.policies.quiver.placement import DataSetSpace, place, probe_result
from hotset.storage.throttled import ThrottledStore
from packed_support import packed_synth

PROBE = 5


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("quiverprobe") / "ds", n=400, seed=2, chunk_size=16, shuffle_seed=0
    )


def _times(packed: Path, *, compute_s: float, workers: int) -> list[float]:
    data = hotset.open_dataset(packed, decode="bytes")
    data = data.with_store(ThrottledStore(data.store, latency_ms=4.0, max_concurrency=1))
    with hotset.loader(
        data,
        system="quiver",
        system_options={"probe": PROBE},
        cache="40%",
        batch_size=16,
        num_workers=workers,
        seed=0,
    ) as loader:
        loader.set_epoch(0)
        for _ in loader:
            time.sleep(compute_s)
        summary = loader.system.policy.summary()
        rows = loader.decisions().rows()
        assert summary["probe_batches"] == PROBE
        # the probe's batches were planned without the cache: every request a read
        assert {row[1] for row in rows[: PROBE * 16]} == {2}
        return loader.batch_seconds()


def test_the_probe_measures_benefit_and_placement_follows_it(packed: Path) -> None:
    io_bound = probe_result("io", "a", _times(packed, compute_s=0.0, workers=0), probe=PROBE)
    hidden = probe_result("gpu", "b", _times(packed, compute_s=0.15, workers=2), probe=PROBE)
    assert io_bound.benefit > 2.0, io_bound
    assert hidden.benefit < 1.1, hidden
    sizes = DataSetSpace(size_bytes=10_000, chunk_bytes=1_000)
    got = place({"a": sizes, "b": sizes}, [io_bound, hidden], budget_bytes=4_000)
    assert got == {"a": "chunks", "b": "none"}


def test_batch_seconds_has_one_time_per_yielded_batch(packed: Path) -> None:
    data = hotset.open_dataset(packed, decode="bytes")
    with hotset.loader(data, system="quiver", cache="40%", batch_size=16, seed=0) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            yielded = sum(1 for _ in loader)
            times = loader.batch_seconds()
            assert len(times) == yielded == 25
            assert all(t >= 0 for t in times)
