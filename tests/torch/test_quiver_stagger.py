"""Quiver jobs started apart on one shared namespace join the chunk the others load
(FAST'20 Algorithm 1, ``getCurrentChunk``), so they still read each item about once
between them; each job still trains every sample once per epoch.

Real processes (tests/torch/quiver_stagger_job.py), a real redis-server, a packed
data set on disk. Jobs start staggered by progress: job j once job 0 has trained
j x 0.3 epoch. Starting every job at chunk 0, as before, a later job re-read the
chunks the others had released and loaded the next ones alone (about 3 reads per
item per epoch here). The floor for these starts is 1 + 0.6 / 4 = 1.15: the cycle
spans the 4 epochs plus the 0.6 epoch between the first and the last start.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hotset
from packed_support import packed_synth
from redis_support import RedisProcess

HERE = Path(__file__).parent
N, JOBS, EPOCHS = 960, 3, 4
#: job j starts once job 0 trained j x this many batches (0.3 of its 60-batch epoch)
START_AFTER = 18
JOB_TIMEOUT_S = 200.0


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("quiverstagger") / "ds", n=N, seed=4, chunk_size=8, shuffle_seed=3
    )


def _run_jobs(packed: Path, server: RedisProcess, out: Path, namespace: str) -> list[Any]:
    """Every job as its own process; their results once all are done."""
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "quiver_stagger_job.py"),
                str(packed),
                server.url,
                str(server.port),
                namespace,
                str(j),
                str(JOBS),
                str(EPOCHS),
                str(START_AFTER),
                str(out / f"job{j}.json"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for j in range(JOBS)
    ]
    deadline = time.monotonic() + JOB_TIMEOUT_S
    errors = []
    for j, proc in enumerate(procs):
        try:
            _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()  # only this test's own job processes
            raise AssertionError(f"job {j} did not finish in {JOB_TIMEOUT_S} s") from None
        if proc.returncode:
            errors.append(f"job {j} exited {proc.returncode}: {err[-2000:]}")
    assert not errors, "\n".join(errors)
    return [json.loads((out / f"job{j}.json").read_text()) for j in range(JOBS)]


def test_staggered_jobs_join_the_current_chunk_and_read_each_item_about_once(
    packed: Path, redis_server: RedisProcess, tmp_path: Path
) -> None:
    jobs = _run_jobs(packed, redis_server, tmp_path, "quiver-stagger")
    for j, job in enumerate(jobs):
        assert len(job["served"]) == EPOCHS
        for epoch, ids in enumerate(job["served"]):
            assert sorted(ids) == list(range(N)), f"job {j} epoch {epoch}: not exactly once"
    data_bytes = int(np.sum(hotset.open_dataset(packed, decode="bytes").manifest.sizes))
    keys = ("storage_bytes", "rebuild_bytes", "degraded_bytes")
    read = sum(row.get(k, 0) for job in jobs for row in job["rows"] for k in keys)
    reads_per_item = read / data_bytes / EPOCHS  # across the jobs, per epoch
    assert reads_per_item <= 1.5, (reads_per_item, [job["rows"] for job in jobs])
    # the later jobs joined the cycle where job 0 was, not at its start
    steps = [job["policy"].get("joined_step") for job in jobs]
    assert steps[0] == 0 and 0 < steps[1] < steps[2], steps


def _loader(packed: Path, url: str, seed: int, namespace: str | None) -> Any:
    return hotset.loader(
        hotset.open_dataset(packed, decode="bytes"),
        system="quiver",
        cache=url,
        cache_bytes=0.3,
        namespace=namespace,
        batch_size=16,
        seed=seed,
    )


def _ids(it: Any, batches: int | None = None) -> list[int]:
    out: list[int] = []
    for i, (_, _, ids, _) in enumerate(it):
        out += ids.tolist()
        if batches is not None and i + 1 == batches:
            break
    return out


def test_the_joined_step_is_saved_and_a_resume_does_not_ask_again(
    packed: Path, redis_url: str
) -> None:
    """The step is read once, before the epoch's start state: a job resumed after the
    namespace moved on makes the decisions the interrupted one made."""
    lead = _loader(packed, redis_url, 1, "quiver-resume")
    late = _loader(packed, redis_url, 2, "quiver-resume")
    again = _loader(packed, redis_url, 2, "quiver-resume")
    private = _loader(packed, redis_url, 3, None)
    try:
        lead_it = iter(lead)
        _ids(lead_it, 20)  # the lead is a few chunks into its cycle
        late_it = iter(late)
        _ids(late_it, 5)
        joined = late.policy_summary()["joined_step"]
        assert joined is not None and joined > 0
        state = late.state_dict()
        rest = _ids(late_it)
        _ids(lead_it, 20)  # the namespace moves on meanwhile
        assert lead.policy_summary()["joined_step"] == 0
        again.load_state_dict(state)
        assert _ids(iter(again)) == rest
        assert again.policy_summary()["joined_step"] == joined
        _ids(iter(private), 3)  # a private cache has no other job to join
        assert private.policy_summary()["joined_step"] is None
    finally:
        for loader in (lead, late, again, private):
            loader.close()
