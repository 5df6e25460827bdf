"""``hotset bench multijob``: K independent jobs on one data set, private vs shared cache.

Why this suite: a user sweeping hyper-parameters runs tens of jobs on the same
data at once, and every job reading the whole data set each epoch makes the
storage server the bottleneck (Quiver, FAST'20 §5.2). ``bench ranks`` measures
one job's ranks; this measures separate jobs -- each its own process, seed,
random order and random losses (the model's stand-in), no process group --
over one modeled storage server
(:class:`~hotset.storage.shared_throttle.SharedThrottledStore`: ``latency_ms`` per
request, ``concurrency`` requests in flight across all jobs, one link of
``bandwidth_mb_s``; a ``--store`` preset or the suite's default), in two arrangements:

* ``private``: each job its own embedded shared-memory cache of ``cache_frac``
  of the data set's bytes;
* ``shared``: one Redis namespace (a redis-server the suite starts on a free
  loopback port) of ``cache_frac``, which every job joins with the same
  ``namespace=``: entries any job put serve every job, and planned misses and
  unit reads look there before storage (``pool_hits``, ``pool_unit_hits``).

A system without a cache (``pytorch``) has nothing to arrange: it runs once
(arrangement ``none``). Each arrangement runs twice: ``lockstep`` (every job
starts its first epoch at once) and ``staggered`` (job j starts j gaps after job
0, :mod:`hotset.bench.stagger`; the offset is real time: the job process sleeps
before its first epoch while the others read). Rows are per epoch averaged over
every epoch (the cold first one included: co-operative loading matters most
there) and summed over the jobs. ``reads_per_item_per_epoch`` is the bytes moved
from storage over the data set's bytes: how many times each item was read per
epoch across all jobs (1.0 = once between them; K = each job read everything).
Coverage is checked per job and epoch: ``min_ids_trained`` is the fewest distinct
ids any job trained in any epoch, ``ids_trained_per_job_epoch`` their mean,
``every_id_every_epoch`` whether each job trained all.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np

from hotset import options as typed
from hotset.bench.jobprocs import wait_for_jobs
from hotset.bench.stagger import Stagger, parse_stagger
from hotset.bench.workloads import PACK_CHUNK_SIZE
from hotset.errors import HotsetError
from hotset.options import cli
from hotset.storage.presets import StoreModel

DEFAULT_SYSTEMS = ("pytorch", "minio", "quiver")
ARRANGEMENTS = ("private", "shared")
#: the store modeled without ``--store``: what the committed results used (an unlimited link)
DEFAULT_STORE = StoreModel(latency_ms=2.0, bandwidth_mb_s=math.inf, max_concurrency=4)
#: how long a job may take, start-up included, before the suite gives up on it
JOB_TIMEOUT_S = 1800.0


def _job_main(index: int, job: dict[str, Any], barrier: Any) -> None:
    """One training job: wait for the others, wait its start offset (staggered runs),
    train ``epochs`` epochs, write what it did and when (system-wide monotonic clock)."""
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
        if job["start_gap_s"] > 0:
            time.sleep(index * job["start_gap_s"])  # staggered: the others read meanwhile
        start_at = time.monotonic()
        start = time.perf_counter()
        for epoch in range(job["epochs"]):
            ld.set_epoch(epoch)
            mine: list[int] = []
            for _, _, ids, _ in ld:
                if job["step_s"] > 0:
                    time.sleep(job["step_s"])  # the model's step on the accelerator
                ld.update(ids, torch.from_numpy(rng.random(len(ids)) + 0.1))
                mine += ids.tolist()
            served.append(mine)
        wall = time.perf_counter() - start
        end_at = time.monotonic()
        rows = ld.report()
    out = {
        "rows": rows,
        "distinct": [len(set(s)) for s in served],
        "served": [len(s) for s in served],
        "wall": wall,
        "start_at": start_at,
        "end_at": end_at,
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
    names = [str(i) for i in range(jobs)]
    wait_for_jobs(procs, names=names, timeout_s=JOB_TIMEOUT_S, suite="multijob", what=job["system"])
    return time.perf_counter() - started


@dataclass(frozen=True)
class _Suite:
    """What every run of one ``bench multijob`` invocation shares."""

    jobs: int
    dataset: str
    dataset_bytes: int
    n: int
    redis_url: str
    epochs: int
    batch_size: int
    workers: int
    seed: int
    work: Path
    #: seconds each job waits per batch, the model's step (0: none, the loop only reads)
    step_s: float = 0.0


def _one_run(
    suite: _Suite,
    *,
    arrangement: str,
    system: str,
    cache_frac: float,
    store: Any,
    start_gap_s: float,
    run_id: int,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One arrangement of one system, lockstep (``start_gap_s`` 0) or staggered:
    (its table row, each job's report)."""
    out = suite.work / f"run{run_id}"
    out.mkdir()
    shared = arrangement == "shared"
    job = {
        "dataset": suite.dataset,
        "store": store,
        "system": system,
        # private: the embedded shared-memory cache, a fraction of the data set's bytes
        "cache": suite.redis_url if shared else (cache_frac if arrangement == "private" else None),
        "cache_bytes": cache_frac if shared else None,  # a Redis namespace's budget
        "namespace": f"bench-multijob-{run_id}" if shared else None,
        "batch_size": suite.batch_size,
        "workers": suite.workers,
        "seed": suite.seed,
        "epochs": suite.epochs,
        "step_s": suite.step_s,
        "start_gap_s": start_gap_s,
        "out": str(out),
    }
    wall_with_startup = _start_jobs(suite.jobs, job)
    reports = [json.loads((out / f"job{i}.json").read_text()) for i in range(suite.jobs)]
    row = {"system": system, "arrangement": arrangement, "cache_frac": cache_frac}
    # lockstep: the slowest job's wall from the common start, as always; staggered: from
    # the first start to the last end, so the offsets count (fewer jobs ran meanwhile)
    seconds = _wall(reports) if start_gap_s == 0 else _makespan(reports)
    row |= _counts(suite, arrangement, cache_frac, reports, seconds)
    row |= _timing(reports, start_gap_s, wall_with_startup)
    first = min(r["start_at"] for r in reports)
    per_job = [
        {
            "job": i,
            "seed": suite.seed + i,
            "rows": r["rows"],
            "wall_seconds": round(r["wall"], 3),
            "start_offset_s": round(r["start_at"] - first, 3),
        }
        for i, r in enumerate(reports)
    ]
    return row, per_job


def _counts(
    suite: _Suite,
    arrangement: str,
    cache_frac: float,
    reports: list[dict[str, Any]],
    seconds: float,
) -> dict[str, Any]:
    """The row's storage, hit and coverage columns, per epoch summed over the jobs, and
    the samples all jobs trained per second of ``seconds``."""
    jobs, epochs = suite.jobs, suite.epochs
    rows = [r["rows"] for r in reports]

    def per_epoch(*keys: str) -> float:
        return sum(row[k] for job_rows in rows for row in job_rows for k in keys) / epochs

    requests = per_epoch("requests")
    storage_bytes = per_epoch("storage_bytes", "rebuild_bytes", "degraded_bytes")
    requests_to_store = per_epoch("storage_requests", "rebuild_reads", "degraded_reads")
    distinct = [d for r in reports for d in r["distinct"]]
    return {
        # memory all jobs hold together: K private caches, or the one namespace
        "cache_total_frac": round(cache_frac * (jobs if arrangement == "private" else 1), 4),
        "jobs": jobs,
        "storage_requests_per_epoch": round(requests_to_store, 1),
        "storage_requests_per_job_epoch": round(requests_to_store / jobs, 1),
        "storage_mb_per_epoch": round(storage_bytes / 1e6, 3),
        "storage_mb_per_job_epoch": round(storage_bytes / 1e6 / jobs, 3),
        "reads_per_item_per_epoch": round(storage_bytes / suite.dataset_bytes, 3),
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
        "ids_trained_per_job_epoch": round(sum(distinct) / len(distinct), 1),
        "every_id_every_epoch": all(d == suite.n for d in distinct),
        "samples_per_s": round(requests * epochs / seconds, 1) if seconds else 0.0,
    }


def _wall(reports: list[dict[str, Any]]) -> float:
    """The slowest job's wall seconds, each from its own start (its own offset excluded)."""
    return float(max(r["wall"] for r in reports))


def _makespan(reports: list[dict[str, Any]]) -> float:
    """The first job's start to the last job's end (system-wide monotonic clock)."""
    return float(max(r["end_at"] for r in reports) - min(r["start_at"] for r in reports))


def _timing(
    reports: list[dict[str, Any]], start_gap_s: float, wall_with_startup: float
) -> dict[str, Any]:
    """When the jobs started and ended: the planned gap and what the clock saw."""
    starts = [r["start_at"] for r in reports]
    return {
        "wall_seconds": round(_wall(reports), 2),
        "wall_seconds_with_startup": round(wall_with_startup, 2),
        "start": "staggered" if start_gap_s > 0 else "lockstep",
        "start_gap_s": round(start_gap_s, 3),
        "start_spread_s": round(max(starts) - min(starts), 3),
        "makespan_seconds": round(_makespan(reports), 2),
    }


def _arrangements(system: str) -> tuple[str, ...]:
    """A system without a cache has nothing to share: it runs once, as ``none``."""
    from hotset.systems.registry import capabilities_of, parse_system

    return ARRANGEMENTS if capabilities_of(parse_system(system)[0]).caches else ("none",)


@dataclass(frozen=True)
class MultijobOptions:
    """What ``bench multijob`` runs; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike.

    ``chunk_size`` packs the data set in chunk files of that many samples (the
    suites' usual 64 by default): a Quiver chunk of the cache holds more of them,
    so jobs have more units to share between them. ``stagger`` is as typed
    (``--stagger``): ``none`` runs the lockstep rows only, and one job has nothing
    to stagger and runs lockstep only. ``step_ms`` is the model's step per batch, a
    fixed wait in each job (0: none): jobs on accelerators go at the pace of their
    steps (Quiver's multi-jobs "proceed at a similar pace", §5.1), where jobs that
    only read go at the pace the machine gives each process.
    """

    jobs: int = field(default=4, metadata=cli(type=click.IntRange(min=1)))
    systems: tuple[str, ...] = field(default=DEFAULT_SYSTEMS, metadata=cli(parse=typed.systems))
    cache_fracs: tuple[float, ...] = field(
        default=(0.1, 0.2),
        metadata=cli(
            "Comma list: each job's private cache, or the one shared namespace, as a "
            "share of the data set's bytes.",
            parse=typed.floats,
            flag="--cache-frac",
        ),
    )
    n: int = field(default=3000, metadata=cli(type=click.IntRange(min=64)))
    epochs: int = field(default=3, metadata=cli(type=click.IntRange(min=1)))
    batch_size: int = field(default=32, metadata=cli(type=click.IntRange(min=1)))
    stagger: str = field(
        default="epoch",
        metadata=cli(
            "Beside each lockstep row, a row whose jobs start apart: 'epoch' (job j of J "
            "starts j/J of a lockstep epoch after job 0), '<F>epoch' (spread over F epochs), "
            "'<S>s' (S seconds between consecutive starts), or 'none' (lockstep rows only)."
        ),
    )
    workers: int = field(default=0, metadata=cli("Per job.", type=click.IntRange(min=0)))
    step_ms: float = field(
        default=0.0,
        metadata=cli(
            "The model's step per batch, a fixed wait in each job (0: the jobs only read).",
            type=click.FloatRange(min=0),
        ),
    )
    seed: int = field(default=0, metadata=cli("Job i uses seed + i.", type=int))
    chunk_size: int = field(
        default=PACK_CHUNK_SIZE,
        metadata=cli("Samples per chunk file of the packed data set.", type=click.IntRange(min=1)),
    )

    def __post_init__(self) -> None:
        """Every bad value fails before any work, naming it."""
        from hotset.systems.registry import get_spec, parse_system

        for spec in self.systems:
            get_spec(parse_system(spec)[0])
        if self.jobs < 1:
            raise HotsetError(f"bench multijob: --jobs must be >= 1, got {self.jobs}")
        if self.epochs < 1:
            raise HotsetError(f"bench multijob: --epochs must be >= 1, got {self.epochs}")
        for frac in self.cache_fracs:
            if not 0 < frac <= 1:
                raise HotsetError(f"bench multijob: a cache share must be in (0, 1], got {frac!r}")
        if not (math.isfinite(self.step_ms) and self.step_ms >= 0):
            raise HotsetError(
                f"bench multijob: --step-ms must be a number >= 0, got {self.step_ms!r}"
            )
        if self.chunk_size < 1:
            raise HotsetError(f"bench multijob: --chunk-size must be >= 1, got {self.chunk_size}")
        parse_stagger(self.stagger)  # a bad --stagger fails here, naming itself

    @property
    def start_stagger(self) -> Stagger | None:
        """How far apart the staggered rows' jobs start; None: lockstep rows only."""
        return parse_stagger(self.stagger)


def run(
    opts: MultijobOptions = MultijobOptions(),
    *,
    store: StoreModel = DEFAULT_STORE,
    progress: bool = True,
) -> dict[str, Any]:
    """Every (system, arrangement, cache share), lockstep then staggered; see the module
    docstring and :class:`MultijobOptions`."""
    from hotset.bench.redis_server import local_redis

    stagger = opts.start_stagger
    table: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hotset-multijob-") as tmp, local_redis() as redis:
        suite = _make_suite(opts, Path(tmp), redis.url)
        for row, per_job in _every_run(suite, opts, store, stagger):
            table.append(row)
            details.append(
                {k: row[k] for k in ("system", "arrangement", "cache_frac", "start")}
                | {"jobs": per_job}
            )
            if progress:
                _print_row(row)
    return {
        "params": _params(suite, store, opts.chunk_size, stagger),
        "store": store.as_dict(),
        "table": table,
        "notes": _notes(suite, store, opts.chunk_size, stagger),
        "jobs": details,
    }


def _make_suite(opts: MultijobOptions, work: Path, redis_url: str) -> _Suite:
    """The synthetic data set, packed, under ``work``, and what every run shares.

    Every system reads the same packed set: chunk readers need it, others ignore it.
    """
    from hotset.bench.workloads import PACK_SHUFFLE_SEED, ensure_packed
    from hotset.data import Manifest, SynthConfig, make_synth

    dataset = str(work / "synth")
    make_synth(dataset, SynthConfig(n=opts.n, image_size=16, seed=opts.seed), workers=1)
    ensure_packed(dataset, chunk_size=opts.chunk_size, seed=PACK_SHUFFLE_SEED)
    return _Suite(
        jobs=opts.jobs,
        dataset=dataset,
        dataset_bytes=int(np.sum(Manifest.load(dataset).sizes)),
        n=opts.n,
        redis_url=redis_url,
        epochs=opts.epochs,
        batch_size=opts.batch_size,
        workers=opts.workers,
        seed=opts.seed,
        work=work,
        step_s=opts.step_ms / 1000.0,
    )


def _every_run(
    suite: _Suite, opts: MultijobOptions, store: StoreModel, stagger: Stagger | None
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(row, per-job reports) of every run, in the table's order: per system, each
    arrangement (one ``none`` without a cache), each cache share, lockstep then staggered."""
    from hotset.storage.local import LocalStore

    inner = LocalStore(suite.dataset)
    run_id = 0
    for system in opts.systems:
        for arrangement in _arrangements(system):
            for frac in opts.cache_fracs if arrangement != "none" else (0.0,):
                pair = _side_by_side(
                    suite, inner, store, stagger, system, arrangement, frac, run_id
                )
                run_id += len(pair)
                yield from pair


def _side_by_side(
    suite: _Suite,
    inner: Any,
    store: StoreModel,
    stagger: Stagger | None,
    system: str,
    arrangement: str,
    frac: float,
    run_id: int,
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The lockstep run, then (``stagger`` set, two jobs or more) the staggered one, whose
    gap in epochs is measured on the lockstep run: (row, per-job reports) for each."""

    def one(gap: float, run: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        server = _server(inner, store)  # a fresh schedule for every run
        return _one_run(
            suite,
            arrangement=arrangement,
            system=system,
            cache_frac=frac,
            store=server,
            start_gap_s=gap,
            run_id=run,
        )

    runs = [one(0.0, run_id)]
    if stagger is not None and suite.jobs > 1:
        epoch_s = runs[0][0]["wall_seconds"] / suite.epochs
        runs.append(one(stagger.gap_s(epoch_s=epoch_s, jobs=suite.jobs), run_id + 1))
    return runs


def _server(inner: Any, store: StoreModel) -> Any:
    """A modeled server with an empty schedule: each run books its own requests."""
    from hotset.storage.shared_throttle import SharedThrottledStore

    return SharedThrottledStore(
        inner,
        latency_ms=store.latency_ms,
        bandwidth_mb_s=store.bandwidth_mb_s,
        max_concurrency=store.max_concurrency,
        context="spawn",
    )


def _print_row(row: dict[str, Any]) -> None:
    print(
        f"{row['system']} {row['arrangement']} {row['cache_frac']:g} {row['start']}: "
        f"{row['storage_requests_per_epoch']:.0f} requests/epoch, "
        f"{row['reads_per_item_per_epoch']:.2f} reads/item/epoch, "
        f"{row['samples_per_s']:.0f} samples/s",
        file=sys.stderr,
    )


def _params(suite: _Suite, store: StoreModel, pack: int, stagger: Stagger | None) -> dict[str, Any]:
    link = store.as_dict()
    return {
        "jobs": suite.jobs,
        "n": suite.n,
        "dataset_bytes": suite.dataset_bytes,
        "epochs": suite.epochs,
        "batch_size": suite.batch_size,
        "latency_ms": store.latency_ms,
        "concurrency": store.max_concurrency,
        "bandwidth_mb_s": link["bandwidth_mb_s"],
        "workers": suite.workers,
        "chunk_size": pack,
        "seed": suite.seed,
        "stagger": None if stagger is None else stagger.describe(),
        "step_ms": suite.step_s * 1000.0,
    }


def _notes(suite: _Suite, store: StoreModel, pack: int, stagger: Stagger | None) -> list[str]:
    jobs, seed, n = suite.jobs, suite.seed, suite.n
    starts = (
        "started together (lockstep)"
        if stagger is None or jobs == 1
        else f"started together (lockstep rows) and staggered ({stagger.describe()})"
    )
    return [
        f"Measured: {jobs} independent job processes (seeds {seed}..{seed + jobs - 1}, "
        f"random losses as the model's stand-in, no process group) {starts} "
        f"on one synthetic data set of {n} samples packed {pack} per chunk, "
        f"over one modeled storage server ({store.describe()}, across all jobs), "
        f"each loader with {suite.workers} DataLoader workers"
        + (
            f", the model's step a {suite.step_s * 1000:g} ms wait per batch."
            if suite.step_s > 0
            else ", no model step (each job only reads)."
        ),
        "private: each job its own shared-memory cache of cache_frac of the data set's "
        "bytes; shared: one Redis namespace (loopback) of cache_frac joined by every job. "
        "none: a system without a cache, run once.",
        "Per epoch averaged over all epochs (the cold first one included), summed over "
        "jobs; storage requests and bytes include rebuild and degraded reads. "
        "reads_per_item_per_epoch = storage bytes / data set bytes (1 = each item read "
        "once across all jobs). Pool hits (samples) and pool unit hits (chunks not read "
        "because other jobs had put what a job needed of them) are never exact hits.",
        "samples_per_s: samples trained by all jobs / seconds: in lockstep rows the "
        "slowest job's wall time after the common start, in staggered rows "
        "makespan_seconds (the first job's start to the last job's end), so the "
        "offsets count; process start-up excluded (wall_seconds_with_startup has it). "
        "wall_seconds is the slowest job's time from its own start in both.",
        "start: lockstep rows start every job's first epoch at once after all are built; "
        "staggered rows start job j start_gap_s x j later (real time: the job sleeps "
        "before its first epoch while the others read). A gap in epochs is the lockstep "
        "row's wall_seconds / epochs x spread / jobs. start_spread_s is the measured "
        "last start minus first start (system-wide monotonic clock).",
    ]
