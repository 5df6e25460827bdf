"""``hotset bench multijob``: K independent jobs on one data set, private vs shared cache.

Why this suite: a user sweeping hyper-parameters runs tens of jobs on the same
data at once, and every job reading the whole data set each epoch makes the
storage server the bottleneck (Quiver, FAST'20 §5.2). ``bench ranks`` measures
one job's ranks; this measures separate jobs -- each its own process, seed,
random order and random losses (the model's stand-in), no process group --
started together over one modeled storage server
(:class:`~hotset.storage.shared_throttle.SharedThrottledStore`: ``latency_ms`` per
request, ``concurrency`` requests in flight across all jobs), in two arrangements:

* ``private``: each job its own embedded shared-memory cache of ``cache_frac``
  of the data set's bytes;
* ``shared``: one Redis namespace (a redis-server the suite starts on a free
  loopback port) of ``cache_frac``, which every job joins with the same
  ``namespace=``: entries any job put serve every job, and planned misses and
  unit reads look there before storage (``pool_hits``, ``pool_unit_hits``).

A system without a cache (``pytorch``) has nothing to arrange: it runs once
(arrangement ``none``). Rows are per epoch averaged over every epoch (the cold
first one included: co-operative loading matters most there) and summed over
the jobs. ``reads_per_item_per_epoch`` is the bytes moved from storage over the
data set's bytes: how many times each item was read per epoch across all jobs
(1.0 = once between them; K = each job read everything). Coverage is checked
per job and epoch: ``min_ids_trained`` is the fewest distinct ids any job
trained in any epoch, ``every_id_every_epoch`` whether each job trained all.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hotset.errors import HotsetError

DEFAULT_SYSTEMS = ("pytorch", "minio", "quiver")
ARRANGEMENTS = ("private", "shared")
#: how long a job may take, start-up included, before the suite gives up on it
JOB_TIMEOUT_S = 1800.0


def _job_main(index: int, job: dict[str, Any], barrier: Any) -> None:
    """One training job: wait for the others, train ``epochs`` epochs, write what it did."""
    import torch

    from hotset.torch import loader as make_loader
    from hotset.torch import open_dataset

    seed = job["seed"] + index
    data = open_dataset(job["dataset"], decode="bytes", retries=0).with_store(job["store"])
    served: list[list[int]] = []
    with make_loader(
        data,
        system=job["system"],
        cache=job["cache"],
        cache_bytes=job["cache_bytes"],
        namespace=job["namespace"],
        batch_size=job["batch_size"],
        num_workers=job["workers"],
        seed=seed,
        check_store="off",
    ) as ld:
        rng = np.random.default_rng([seed, 0x70B])
        barrier.wait(timeout=JOB_TIMEOUT_S)  # every job built: start together
        start = time.perf_counter()
        for epoch in range(job["epochs"]):
            ld.set_epoch(epoch)
            mine: list[int] = []
            for _, _, ids, _ in ld:
                ld.update(ids, torch.from_numpy(rng.random(len(ids)) + 0.1))
                mine += ids.tolist()
            served.append(mine)
        wall = time.perf_counter() - start
        rows = ld.report()
    out = {
        "rows": rows,
        "distinct": [len(set(s)) for s in served],
        "served": [len(s) for s in served],
        "wall": wall,
    }
    Path(job["out"], f"job{index}.json").write_text(json.dumps(out, default=str))


def _start_jobs(jobs: int, job: dict[str, Any]) -> float:
    """Run ``jobs`` job processes at once (spawned, as torch wants); their wall seconds.

    A job that fails stops the rest: they would otherwise wait for it at the
    start barrier until the time limit.
    """
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(jobs)
    procs = [ctx.Process(target=_job_main, args=(i, job, barrier)) for i in range(jobs)]
    started = time.perf_counter()
    for p in procs:
        p.start()
    deadline = started + JOB_TIMEOUT_S
    try:
        while any(p.is_alive() for p in procs) and time.perf_counter() < deadline:
            if any(p.exitcode for p in procs):
                break  # one failed: the rest would wait for it at the barrier
            time.sleep(0.2)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()  # only this suite's own job processes
            p.join()
    failed = [f"job {i} exited with {p.exitcode}" for i, p in enumerate(procs) if p.exitcode]
    if failed:
        raise HotsetError(f"bench multijob: {'; '.join(failed)} ({job['system']})")
    return time.perf_counter() - started


def _one_run(
    *,
    jobs: int,
    arrangement: str,
    system: str,
    cache_frac: float,
    dataset: str,
    dataset_bytes: int,
    n: int,
    store: Any,
    redis_url: str,
    epochs: int,
    batch_size: int,
    workers: int,
    seed: int,
    work: Path,
    run_id: int,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One arrangement of one system: (its table row, each job's report)."""
    out = work / f"run{run_id}"
    out.mkdir()
    shared = arrangement == "shared"
    job = {
        "dataset": dataset,
        "store": store,
        "system": system,
        # private: the embedded shared-memory cache, a fraction of the data set's bytes
        "cache": redis_url if shared else (cache_frac if arrangement == "private" else None),
        "cache_bytes": cache_frac if shared else None,  # a Redis namespace's budget
        "namespace": f"bench-multijob-{run_id}" if shared else None,
        "batch_size": batch_size,
        "workers": workers,
        "seed": seed,
        "epochs": epochs,
        "out": str(out),
    }
    wall_with_startup = _start_jobs(jobs, job)
    reports = [json.loads((out / f"job{i}.json").read_text()) for i in range(jobs)]
    rows = [r["rows"] for r in reports]

    def per_epoch(*keys: str) -> float:
        return sum(row[k] for job_rows in rows for row in job_rows for k in keys) / epochs

    requests = per_epoch("requests")
    storage_bytes = per_epoch("storage_bytes", "rebuild_bytes", "degraded_bytes")
    requests_to_store = per_epoch("storage_requests", "rebuild_reads", "degraded_reads")
    wall = max(r["wall"] for r in reports)
    distinct = [d for r in reports for d in r["distinct"]]
    row = {
        "system": system,
        "arrangement": arrangement,
        "cache_frac": cache_frac,
        # memory all jobs hold together: K private caches, or the one namespace
        "cache_total_frac": round(cache_frac * (jobs if arrangement == "private" else 1), 4),
        "jobs": jobs,
        "storage_requests_per_epoch": round(requests_to_store, 1),
        "storage_requests_per_job_epoch": round(requests_to_store / jobs, 1),
        "storage_mb_per_epoch": round(storage_bytes / 1e6, 3),
        "storage_mb_per_job_epoch": round(storage_bytes / 1e6 / jobs, 3),
        "reads_per_item_per_epoch": round(storage_bytes / dataset_bytes, 3),
        "exact_hit_ratio": round(per_epoch("exact_hits") / requests, 4) if requests else 0.0,
        "substitution_ratio": (
            round(per_epoch("substitutions") / requests, 4) if requests else 0.0
        ),
        "pool_hits_per_epoch": round(per_epoch("pool_hits"), 1),
        "pool_unit_hits_per_epoch": round(per_epoch("pool_unit_hits"), 1),
        "claimed_units_per_epoch": round(per_epoch("claimed_units"), 1),
        "rebuild_reads_per_epoch": round(per_epoch("rebuild_reads"), 1),
        "refused_puts_per_epoch": round(per_epoch("refused_puts"), 1),
        "min_ids_trained": min(distinct),
        "every_id_every_epoch": all(d == n for d in distinct),
        "samples_per_s": round(requests * epochs / wall, 1) if wall else 0.0,
        "wall_seconds": round(wall, 2),
        "wall_seconds_with_startup": round(wall_with_startup, 2),
    }
    per_job = [
        {"job": i, "seed": seed + i, "rows": r["rows"], "wall_seconds": round(r["wall"], 3)}
        for i, r in enumerate(reports)
    ]
    return row, per_job


def _arrangements(system: str) -> tuple[str, ...]:
    """A system without a cache has nothing to share: it runs once, as ``none``."""
    from hotset.systems.registry import capabilities_of, parse_system

    return ARRANGEMENTS if capabilities_of(parse_system(system)[0]).caches else ("none",)


def run(
    *,
    jobs: int = 4,
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    cache_fracs: Sequence[float] = (0.1, 0.2),
    n: int = 3000,
    epochs: int = 3,
    batch_size: int = 32,
    latency_ms: float = 2.0,
    concurrency: int = 4,
    workers: int = 0,
    seed: int = 0,
    progress: bool = True,
    chunk_size: int | None = None,
) -> dict[str, Any]:
    """Every (system, arrangement, cache share); see the module docstring.

    ``chunk_size`` packs the data set in chunk files of that many samples (the
    suites' usual 64 by default): a Quiver chunk of the cache holds more of them,
    so jobs have more units to share between them.
    """
    from hotset.bench.redis_server import local_redis
    from hotset.bench.workloads import PACK_CHUNK_SIZE, PACK_SHUFFLE_SEED, ensure_packed
    from hotset.data import Manifest, SynthConfig, make_synth
    from hotset.storage.local import LocalStore
    from hotset.storage.shared_throttle import SharedThrottledStore
    from hotset.systems.registry import get_spec, parse_system

    for spec in systems:
        get_spec(parse_system(spec)[0])
    if jobs < 1:
        raise HotsetError(f"bench multijob: --jobs must be >= 1, got {jobs}")
    if epochs < 1:
        raise HotsetError(f"bench multijob: --epochs must be >= 1, got {epochs}")
    for frac in cache_fracs:
        if not 0 < frac <= 1:
            raise HotsetError(f"bench multijob: a cache share must be in (0, 1], got {frac!r}")
    table: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hotset-multijob-") as tmp, local_redis() as redis:
        work = Path(tmp)
        dataset = str(work / "synth")
        make_synth(dataset, SynthConfig(n=n, image_size=16, seed=seed), workers=1)
        # every system reads the same packed set: chunk readers need it, others ignore it
        pack = PACK_CHUNK_SIZE if chunk_size is None else chunk_size
        if pack < 1:
            raise HotsetError(f"bench multijob: --chunk-size must be >= 1, got {pack}")
        ensure_packed(dataset, chunk_size=pack, seed=PACK_SHUFFLE_SEED)
        dataset_bytes = int(np.sum(Manifest.load(dataset).sizes))
        inner = LocalStore(dataset)
        for system in systems:
            for arrangement in _arrangements(system):
                fracs = cache_fracs if arrangement != "none" else (0.0,)
                for frac in fracs:
                    store = SharedThrottledStore(
                        inner, latency_ms=latency_ms, max_concurrency=concurrency, context="spawn"
                    )
                    row, per_job = _one_run(
                        jobs=jobs,
                        arrangement=arrangement,
                        system=system,
                        cache_frac=frac,
                        dataset=dataset,
                        dataset_bytes=dataset_bytes,
                        n=n,
                        store=store,
                        redis_url=redis.url,
                        epochs=epochs,
                        batch_size=batch_size,
                        workers=workers,
                        seed=seed,
                        work=work,
                        run_id=len(table),
                    )
                    table.append(row)
                    details.append(
                        {k: row[k] for k in ("system", "arrangement", "cache_frac")}
                        | {"jobs": per_job}
                    )
                    if progress:
                        print(
                            f"{system} {arrangement} {frac:g}: "
                            f"{row['storage_requests_per_epoch']:.0f} requests/epoch, "
                            f"{row['reads_per_item_per_epoch']:.2f} reads/item/epoch, "
                            f"{row['samples_per_s']:.0f} samples/s",
                            file=sys.stderr,
                        )
    return {
        "params": {
            "jobs": jobs,
            "n": n,
            "dataset_bytes": dataset_bytes,
            "epochs": epochs,
            "batch_size": batch_size,
            "latency_ms": latency_ms,
            "concurrency": concurrency,
            "workers": workers,
            "chunk_size": pack,
            "seed": seed,
        },
        "table": table,
        "notes": [
            f"Measured: {jobs} independent job processes (seeds {seed}..{seed + jobs - 1}, "
            "random losses as the model's stand-in, no process group) started together "
            f"on one synthetic data set of {n} samples packed {pack} per chunk, "
            f"over one modeled storage server ({latency_ms:g} ms per request, {concurrency} "
            "in flight across all jobs), each loader with "
            f"{workers} DataLoader workers.",
            "private: each job its own shared-memory cache of cache_frac of the data set's "
            "bytes; shared: one Redis namespace (loopback) of cache_frac joined by every job. "
            "none: a system without a cache, run once.",
            "Per epoch averaged over all epochs (the cold first one included), summed over "
            "jobs; storage requests and bytes include rebuild and degraded reads. "
            "reads_per_item_per_epoch = storage bytes / data set bytes (1 = each item read "
            "once across all jobs). Pool hits (samples) and pool unit hits (chunks not read "
            "because other jobs had put what a job needed of them) are never exact hits.",
            "samples_per_s: samples trained by all jobs / the slowest job's wall time after "
            "the common start (process start-up excluded; wall_seconds_with_startup has it).",
        ],
        "jobs": details,
    }
