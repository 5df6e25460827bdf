"""Quiver §5.3 closed through the real loader: two jobs on one Redis namespace publish
their probes on the namespace's board (the first batches of epoch 0 without the cache,
of epoch 1 with it) and each applies the placement from epoch 2 on. The job whose training step hides its reads turns its caching off; the job
that waits on storage keeps two chunks. A resume applies the board the state
recorded, not the board as it is now.

Real parts: a packed data set on disk behind a throttled store (4 ms a request,
one at a time), a real redis-server, DataLoader workers for the compute-bound job.
The contrast is the one tests/torch/test_quiver_probe.py measures (benefit > 2
against < 1.1), large enough for a loaded machine.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import torch

import hotset
from hotset.cachestore.redis_store import RedisCache
from hotset.coordination.probe_board import ProbeBoard
from hotset.engine.outcome import Outcome
from hotset.storage.throttled import ThrottledStore
from packed_support import packed_synth
from redis_support import RedisProcess

PROBE, N, BATCH = 5, 400, 16
SPEC = f"quiver[probe={PROBE},placement=true]"


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("quiverloop") / "ds", n=N, seed=2, chunk_size=16, shuffle_seed=0
    )


def _loader(packed: Path, url: str, *, workers: int, seed: int) -> hotset.torch.HotsetLoader:
    data = hotset.open_dataset(packed, decode="bytes")
    data = data.with_store(ThrottledStore(data.store, latency_ms=4.0, max_concurrency=1))
    return hotset.loader(
        data,
        system=SPEC,
        cache=url,
        cache_bytes=0.4,
        namespace="loop",
        batch_size=BATCH,
        num_workers=workers,
        seed=seed,
        check_store="off",
    )


def _epoch(loader: Any, epoch: int, *, compute_s: float = 0.0, stop: int = 0) -> list[int]:
    """One epoch (or its first ``stop`` batches); ``compute_s`` a step in a probe window."""
    loader.set_epoch(epoch)
    served: list[int] = []
    for i, (_, _, ids, _) in enumerate(loader):
        if i < PROBE:
            time.sleep(compute_s)
        loader.update(ids, torch.rand(len(ids)) + 0.1)
        served += ids.tolist()
        if stop and i + 1 == stop:
            break
    return served


def _board(url: str, namespace: str | None) -> ProbeBoard:
    assert namespace is not None
    return ProbeBoard(RedisCache(url, namespace=namespace, capacity_bytes=1))


def test_the_job_that_hides_its_io_stops_caching_and_the_other_keeps_its_chunks(
    packed: Path, redis_server: RedisProcess
) -> None:
    redis_server.client().flushall()
    url = redis_server.url
    with (
        _loader(packed, url, workers=0, seed=0) as io,
        _loader(packed, url, workers=2, seed=1) as gpu,
    ):
        for epoch in range(2):
            _epoch(io, epoch)
            _epoch(gpu, epoch, compute_s=0.15)
        board = _board(url, io.namespace).read()
        assert len(board) == 2, board
        by_benefit = sorted(board, key=lambda r: r["t_miss"] / r["t_hit"])
        assert by_benefit[0]["t_miss"] / by_benefit[0]["t_hit"] < 1.1
        assert by_benefit[1]["t_miss"] / by_benefit[1]["t_hit"] > 2.0
        io_served, gpu_served = _epoch(io, 2), _epoch(gpu, 2)
        assert sorted(io_served) == sorted(gpu_served) == list(range(N))
        gpu_sum, io_sum = gpu.policy_summary(), io.policy_summary()
        assert gpu_sum["caching"] is False and gpu_sum["board_jobs"] == 1
        assert io_sum["caching"] is True and io_sum["placement"] == "chunks"
        # the job turned off read every request as asked, and put nothing in epoch 2
        outcomes = {row[1] for row in gpu.decisions().rows()}
        assert outcomes == {int(Outcome.MISS)}
        row = gpu.report()[-1]
        assert row["exact_hits"] == row["substitutions"] == 0
        assert not gpu.system.policy.resident()
        assert io.report()[-1]["exact_hits"] + io.report()[-1]["substitutions"] > 0
        gpu_job = gpu._parts.coordination.probes.job
    # closed: each withdrew its record (a killed job's would age out with its lease)
    left = _board(url, io.namespace).read()
    assert all(r["job"] != gpu_job for r in left) and left == []


def test_a_resume_applies_the_board_its_state_recorded(
    packed: Path, redis_server: RedisProcess
) -> None:
    redis_server.client().flushall()
    url = redis_server.url
    with _loader(packed, url, workers=0, seed=0) as io:
        with _loader(packed, url, workers=2, seed=1) as gpu:
            for epoch in range(2):
                _epoch(io, epoch)
                _epoch(gpu, epoch, compute_s=0.15)
            gpu.set_epoch(2)
            it = iter(gpu)
            head = [sid for _ in range(3) for sid in next(it)[2].tolist()]
            state = gpu.state_dict()
            for _ in it:
                pass
            want = gpu.decisions().rows()
        assert gpu.policy_summary()["board_jobs"] == 1
        # the board changes before the resume: the io job's record is gone
        _board(url, io.namespace).withdraw(io._parts.coordination.probes.job)
    with _loader(packed, url, workers=2, seed=1) as again:
        again.load_state_dict(state)
        rest = _epoch(again, 2)
        assert sorted(head + rest) == list(range(N))
        assert again.decisions().rows() == want
        assert again.policy_summary()["caching"] is False
        assert again.policy_summary()["board_jobs"] == 1  # io's record, as recorded


def test_a_reprobe_places_a_job_again_once_its_benefit_changed(
    packed: Path, redis_server: RedisProcess
) -> None:
    """Its step hid its reads at the first probe (caching off); by the re-probe the job
    waits on storage (here: its step went away), and the next epoch caches again."""
    redis_server.client().flushall()
    data = hotset.open_dataset(packed, decode="bytes")
    data = data.with_store(ThrottledStore(data.store, latency_ms=4.0, max_concurrency=1))
    with hotset.loader(
        data,
        system=f"quiver[probe={PROBE},placement=true,reprobe_epochs=3]",
        cache=redis_server.url,
        cache_bytes=0.4,
        namespace="reprobe",
        batch_size=BATCH,
        num_workers=2,
        seed=0,
        check_store="off",
    ) as job:
        caching = []
        for epoch, step in enumerate([0.15, 0.15, 0.15, 0.0, 0.0, 0.0]):
            _epoch(job, epoch, compute_s=step)
            caching.append(job.policy_summary()["caching"])
        benefits = [
            r["t_miss"] / r["t_hit"] for r in _board(redis_server.url, job.namespace).read()
        ]
        # off from epoch 2; epoch 3 re-probes (caching through epoch 4, its second window);
        # placed anew from epoch 5
        assert caching == [True, True, False, True, True, True], (caching, benefits)
        assert job.policy_summary()["probe_epoch"] == 3
        assert benefits[0] > 1.5


def test_without_a_shared_namespace_a_job_places_by_its_own_probe(packed: Path) -> None:
    """A private (embedded) cache has no board: the job alone decides, and one whose step
    hides its reads (here: a local store, no latency, a 100 ms step) turns caching off."""
    data = hotset.open_dataset(packed, decode="bytes")
    with hotset.loader(
        data, system=SPEC, cache="40%", batch_size=BATCH, num_workers=2, seed=0
    ) as job:
        assert (
            job._parts.coordination.probes is not None
            and job._parts.coordination.probes.board is None
        )
        for epoch in range(3):
            _epoch(job, epoch, compute_s=0.1)
        summary = job.policy_summary()
        assert summary["caching"] is False and summary["board_jobs"] == 0, summary
        assert summary["placement"] == "none"  # its data set: only a job that gains nothing
        row = job.report()[-1]
        assert row["exact_hits"] == row["substitutions"] == 0
