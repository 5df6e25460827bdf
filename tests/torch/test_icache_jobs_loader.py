"""Two iCACHE jobs, each its own process, on one shared Redis namespace (HPCA'23 §III-D).

Each job's loader probes its benefit (the first ``benefit_probe`` batches of every
epoch without the cache, the next as many with it), publishes it with its RIV at
the next epoch's start, reads the other's, and keys its cache by both jobs' AIV.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import numpy as np

from hotset.engine.outcome import Outcome
from redis_support import RedisProcess

EPOCHS, BATCH, PROBE = 4, 16, 2
SPEC = f"icache[multijob=true,benefit_probe={PROBE},eligible_above=1.0,warm_up=1,window=32]"


def _job(index: int, dataset: str, url: str, start: Any, out: str) -> None:
    """One job: train EPOCHS epochs with losses of its own, write what its loader saw."""
    import torch

    import hotset

    data = hotset.open_dataset(dataset, decode="bytes")
    truth = [data.store.read(k) for k in data.manifest.keys]
    rng = np.random.default_rng(index)
    hard = rng.random(len(truth)) + 0.1  # each job finds other samples hard
    summaries, probe_hits = [], []
    with hotset.loader(
        data, system=SPEC, cache=url, cache_bytes=0.5, namespace="jobs",
        batch_size=BATCH, seed=index,
    ) as loader:  # fmt: skip
        start.wait(timeout=60)
        for epoch in range(EPOCHS):
            loader.set_epoch(epoch)
            for x, _y, ids, _w in loader:
                assert x == [truth[s] for s in ids.tolist()]
                loader.update(ids, torch.from_numpy(hard[ids.numpy()]))
            outcomes = loader.decisions().outcomes[: PROBE * BATCH]
            probe_hits.append(sum(o != Outcome.MISS for o in outcomes))
            summaries.append(loader.system.policy.summary())
            start.wait(timeout=60)  # epochs in step: each finds the other's entry
        jobs = loader._parts.coordination.jobs  # what this job published
        assert jobs is not None
        entry = {"job": jobs.shared.job, "benefit": jobs.benefit, "key": jobs.shared.key}
    Path(out).write_text(json.dumps({"summaries": summaries, "probe": probe_hits, **entry}))


def test_two_job_processes_key_their_caches_by_both_jobs(
    dataset_dir: Path, redis_server: RedisProcess, tmp_path: Path
) -> None:
    redis_server.client().flushall()
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    outs = [str(tmp_path / f"job{i}.json") for i in range(2)]
    procs = [
        ctx.Process(target=_job, args=(i, str(dataset_dir), redis_server.url, start, outs[i]))
        for i in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    got = [json.loads(Path(o).read_text()) for o in outs]
    for job in got:
        assert job["probe"] == [0] * EPOCHS  # the probe batches never touch the cache
        assert isinstance(job["benefit"], float) and job["benefit"] > 0
        first, *later = job["summaries"]
        assert first["multijob_jobs"] == 0  # nothing measured before the first epoch
        # from the third epoch on both jobs have published: each keys by both
        assert [s["multijob_jobs"] for s in later[1:]] == [2] * (EPOCHS - 2)
    # each job left the namespace when its loader closed: nothing stays behind
    assert redis_server.client().hgetall(got[0]["key"]) == {}


def _train(loader: Any, it: Any, hard: np.ndarray, batches: int | None = None) -> list[int]:
    import torch

    out: list[int] = []
    for i, (_, _, ids, _) in enumerate(it):
        out += ids.tolist()
        loader.update(ids, torch.from_numpy(hard[ids.numpy()]))
        if batches is not None and i + 1 == batches:
            break
    return out


def test_the_jobs_snapshot_is_saved_and_a_resume_does_not_ask_again(
    dataset_dir: Path, redis_url: str
) -> None:
    """The other jobs' entries are read at the epoch boundary into the policy's state: a
    job resumed after the namespace changed makes the decisions the interrupted one made."""
    import hotset
    from hotset.cachestore.redis_store import RedisCache
    from hotset.coordination.job_importance import SharedJobs

    def make() -> Any:
        return hotset.loader(
            hotset.open_dataset(dataset_dir, decode="bytes"), system=SPEC, cache=redis_url, cache_bytes=0.5,
            namespace="resume", batch_size=BATCH, seed=7,
        )  # fmt: skip

    n = 200
    job, again = make(), make()
    # the namespace's own records (its data set identity)
    peer = SharedJobs(RedisCache(redis_url, namespace=job.namespace, capacity_bytes=1000), "peer")
    assert peer.key == job._parts.coordination.jobs.shared.key
    hard = np.random.default_rng(0).random(n) + 0.1
    try:
        peer.publish(9.0, np.linspace(0.0, 1.0, n))  # an eligible job that ranks by id
        job.set_epoch(0)
        _train(job, iter(job), hard)
        job.set_epoch(1)
        it = iter(job)
        _train(job, it, hard, 3)  # epoch 0 closed: the peer's entry is in the keys now
        assert job.policy_summary()["multijob_keys"] == "aiv"
        assert "peer" in job.policy_summary()["multijob_eligible"]
        state = job.state_dict()
        rest = _train(job, it, hard)
        peer.publish(9.0, np.linspace(1.0, 0.0, n))  # the namespace changes meanwhile
        again.load_state_dict(state)
        assert _train(again, iter(again), hard) == rest
        assert (
            again.policy_summary()["multijob_eligible"] == job.policy_summary()["multijob_eligible"]
        )
    finally:
        job.close()
        again.close()
