"""``hotset bench placement``: Quiver's benefit-aware placement, open loop vs closed.

Why this suite: a namespace's budget is shared by every job on it, and a job whose
training step hides its reads gains nothing from the space it takes, which a job
that waits on storage would turn into speed (Quiver, FAST'20 §5.3, Fig. 6). Two
real job processes train on two data sets of the same size (different content)
through one content-addressed Redis namespace (``digest=``, a redis-server the
suite starts on a free loopback port) whose budget holds one of them:

* ``io``: no model step, no DataLoader workers: every storage read is on its
  critical path;
* ``gpu``: a model step of ``step_ms`` a batch and two DataLoader workers, whose
  reads overlap the step.

Each job reads its own modeled server
(:class:`~hotset.storage.shared_throttle.SharedThrottledStore`: ``latency_ms`` a
request, one at a time across the job's processes). ``open`` runs
``quiver[probe=N]`` (the probe is measured and applied nowhere: both jobs cache
what they can); ``closed`` runs ``quiver[probe=N,placement=true]``: each job
publishes its probe on the namespace's board and applies the placement at its
next epoch's start. Rows are per job: its probe's benefit, whether it caches at
the end, its epochs' seconds and storage reads after the first (cold) epoch, and
the bytes of its data set the namespace holds when it ends (where the space went).
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

from hotset.bench.jobprocs import wait_for_jobs
from hotset.errors import HotsetError
from hotset.options import cli

LOOPS = {"open": "quiver[probe={probe}]", "closed": "quiver[probe={probe},placement=true]"}
JOBS = ("io", "gpu")
#: how long a job may take, start-up included, before the suite gives up on it
JOB_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class PlacementOptions:
    """What ``bench placement`` runs (every run of one invocation shares it); the command
    line is generated from the fields (:mod:`hotset.cli.typed_options`), so a run built
    in Python is checked alike."""

    n: int = field(default=600, metadata=cli(type=click.IntRange(min=64)))
    epochs: int = field(default=5, metadata=cli(type=click.IntRange(min=2)))
    batch_size: int = field(default=16, metadata=cli(type=click.IntRange(min=1)))
    probe: int = field(default=8, metadata=cli("Batches a window.", type=click.IntRange(min=2)))
    latency_ms: float = field(
        default=2.0,
        metadata=cli(
            "Each job's modeled store: ms a request, one at a time.",
            type=click.FloatRange(min=0),
        ),
    )
    step_ms: float = field(
        default=300.0,
        metadata=cli(
            "The gpu job's model step per batch (the io job has none).",
            type=click.FloatRange(min=0),
        ),
    )
    cache_frac: float = field(
        default=1.0,
        metadata=cli(
            "The namespace's budget over the larger data set's bytes.",
            type=click.FloatRange(min=0, min_open=True, max=2),
        ),
    )
    lead_epochs: int = field(
        default=2,
        metadata=cli(
            "Epochs the gpu job trains before the io job starts.", type=click.IntRange(min=0)
        ),
    )
    seed: int = field(default=0, metadata=cli(type=int))

    def __post_init__(self) -> None:
        """Every bad value fails before any work, naming it."""
        if self.lead_epochs < 0 or self.lead_epochs >= self.epochs:
            raise HotsetError(
                f"bench placement: --lead-epochs must be in 0..epochs-1, got {self.lead_epochs}"
            )
        if self.n < 64 or self.epochs < 2 or self.batch_size < 1:
            raise HotsetError(
                f"bench placement: need n >= 64, epochs >= 2, batch size >= 1, got "
                f"n={self.n}, epochs={self.epochs}, batch_size={self.batch_size}"
            )
        if self.probe < 2 or 2 * self.probe * self.batch_size > self.n:
            raise HotsetError(
                f"bench placement: --probe must be >= 2 and its two windows must fit an "
                f"epoch, got {self.probe}"
            )
        if not (self.latency_ms >= 0 and self.step_ms >= 0 and 0 < self.cache_frac <= 2):
            raise HotsetError(
                f"bench placement: latency and step must be >= 0 ms and the cache share in "
                f"(0, 2], got {self.latency_ms}, {self.step_ms}, {self.cache_frac}"
            )


def _job_main(index: int, job: dict[str, Any], barrier: Any, lead_done: Any) -> None:
    """One job: its data set behind its modeled store, ``epochs`` epochs; what each did.

    The ``gpu`` job starts first; the ``io`` job starts once it has trained ``lead``
    epochs (``lead_done``), as a job arriving at a namespace another job filled."""
    import torch

    from hotset.torch import loader as make_loader
    from hotset.torch import open_dataset

    me = job["jobs"][index]
    data = open_dataset(me["dataset"], decode="bytes", retries=0).with_store(me["store"])
    epochs: list[dict[str, Any]] = []
    with make_loader(
        data,
        system=job["system"],
        cache=job["redis_url"],
        cache_bytes=job["cache_bytes"],
        namespace=job["namespace"],
        digest=me["digest"],
        batch_size=job["batch_size"],
        num_workers=me["workers"],
        seed=job["seed"] + index,
        check_store="off",
    ) as ld:
        barrier.wait(timeout=JOB_TIMEOUT_S)  # both built
        if me["waits"]:
            lead_done.wait(timeout=JOB_TIMEOUT_S)
        for epoch in range(job["epochs"]):
            if epoch == job["lead"] and not me["waits"]:
                lead_done.set()
            ld.set_epoch(epoch)
            start, ids = time.perf_counter(), set()
            for _, _, batch_ids, _ in ld:
                time.sleep(me["step_s"])  # the model's step on the accelerator
                ld.update(batch_ids, torch.rand(len(batch_ids)) + 0.1)
                ids.update(batch_ids.tolist())
            seconds = time.perf_counter() - start
            epochs.append(_epoch_row(ld, epoch, seconds, len(ids)))
        # where the space went, when both jobs are done and neither has left yet
        barrier.wait(timeout=JOB_TIMEOUT_S)
        cached = _cached_bytes(ld)
        barrier.wait(timeout=JOB_TIMEOUT_S)
    out = {"epochs": epochs, "cached_bytes": cached}
    Path(job["out"], f"job{index}.json").write_text(json.dumps(out, default=str))


def _epoch_row(ld: Any, epoch: int, seconds: float, distinct: int) -> dict[str, Any]:
    """What one epoch of a job did."""
    row = ld.report()[-1]
    summary = ld.policy_summary()
    return {
        "epoch": epoch,
        "seconds": round(seconds, 3),
        "distinct": distinct,
        "storage_requests": row["storage_requests"] + row["rebuild_reads"],
        "storage_bytes": row["storage_bytes"] + row["rebuild_bytes"],
        "rebuild_reads": row["rebuild_reads"],
        "exact_hits": row["exact_hits"],
        "substitutions": row["substitutions"],
        "pool_hits": row.get("pool_hits", 0),
        "refused_puts": row["refused_puts"],
        "caching": summary.get("caching", True),
        "placement": summary.get("placement"),
        "benefit": summary.get("benefit"),
    }


def _cached_bytes(ld: Any) -> int:
    """The bytes of the job's data set the namespace holds now."""
    n = len(ld.data.manifest)
    sizes = ld.data.manifest.sizes
    key_of = ld._parts.fetcher.key_of  # the job's cache keys (content-addressed here)
    return sum(int(sizes[i]) for i in range(n) if ld.cache.contains(key_of(i)))


def _start_jobs(job: dict[str, Any]) -> None:
    """Both job processes at once (spawned, as torch wants); one failing stops the other."""
    ctx = multiprocessing.get_context("spawn")
    barrier, lead_done = ctx.Barrier(len(JOBS)), ctx.Event()
    procs = [
        ctx.Process(target=_job_main, args=(i, job, barrier, lead_done)) for i in range(len(JOBS))
    ]
    for p in procs:
        p.start()
    wait_for_jobs(procs, names=JOBS, timeout_s=JOB_TIMEOUT_S, suite="placement", what=job["system"])


def _datasets(work: Path, opts: PlacementOptions) -> list[dict[str, Any]]:
    """Two synthetic data sets of one size and different content, each with its digest."""
    from hotset.data import Manifest, SynthConfig, make_synth
    from hotset.data.digest import compute_digest, write_digest
    from hotset.storage.local import LocalStore

    out = []
    for i, name in enumerate(JOBS):
        path = work / name
        make_synth(path, SynthConfig(n=opts.n, image_size=16, seed=opts.seed + 101 * i))
        manifest = Manifest.load(path)
        digest = write_digest(compute_digest(manifest, LocalStore(path)), path / "digest.json")
        out.append({"dataset": str(path), "digest": str(digest), "bytes": int(sum(manifest.sizes))})
    return out


def run(opts: PlacementOptions = PlacementOptions(), *, progress: bool = True) -> dict[str, Any]:
    """Open loop, then closed, on a fresh namespace each; see the module docstring."""
    from hotset.bench.redis_server import local_redis

    table: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hotset-quiverloop-") as tmp, local_redis() as redis:
        work = Path(tmp)
        sets = _datasets(work, opts)
        budget = int(opts.cache_frac * max(s["bytes"] for s in sets))
        steps = {"io": 0.0, "gpu": opts.step_ms / 1000.0}
        for loop, spec in LOOPS.items():
            out = work / loop
            out.mkdir()
            job = {
                "jobs": [
                    sets[i]
                    | {
                        "step_s": steps[name],
                        "workers": 0 if name == "io" else 2,
                        "waits": name == "io",
                        "store": _server(sets[i]["dataset"], opts.latency_ms),
                    }
                    for i, name in enumerate(JOBS)
                ],
                "system": spec.format(probe=opts.probe),
                "redis_url": redis.url,
                "cache_bytes": budget,
                "namespace": f"bench-quiverloop-{loop}",
                "latency_ms": opts.latency_ms,
                "batch_size": opts.batch_size,
                "epochs": opts.epochs,
                "lead": opts.lead_epochs,
                "seed": opts.seed,
                "out": str(out),
            }
            _start_jobs(job)
            for i, name in enumerate(JOBS):
                done = json.loads((out / f"job{i}.json").read_text())
                epochs = done["epochs"]
                row = _row(loop, name, steps[name], done, opts, sets[i]["bytes"], budget)
                table.append(row)
                details.append(
                    {"loop": loop, "job": name, "system": job["system"]} | {"epochs": epochs}
                )
                if progress:
                    _print_row(row)
    return {
        "params": asdict(opts) | {"namespace_bytes": budget},
        "table": table,
        "notes": _notes(opts),
        "jobs": details,
    }


def _server(dataset: str, latency_ms: float) -> Any:
    """A modeled server for one job, with an empty schedule (each run books its own)."""
    from hotset.storage.local import LocalStore
    from hotset.storage.shared_throttle import SharedThrottledStore

    return SharedThrottledStore(
        LocalStore(dataset), latency_ms=latency_ms, max_concurrency=1, context="spawn"
    )


def _row(
    loop: str,
    job: str,
    step_s: float,
    done: dict[str, Any],
    opts: PlacementOptions,
    dataset_bytes: int,
    budget: int,
) -> dict[str, Any]:
    """One job's row: its epochs after the first (cold) one, averaged."""
    epochs = done["epochs"]
    warm = epochs[1:]

    def mean(key: str) -> float:
        return sum(float(e[key]) for e in warm) / len(warm)

    last = epochs[-1]
    return {
        "loop": loop,
        "job": job,
        "step_ms": step_s * 1000.0,
        "benefit": last["benefit"],
        "caching": last["caching"],
        "placement": last["placement"],
        "epoch_s": round(mean("seconds"), 3),
        "samples_per_s": round(opts.n / mean("seconds"), 1),
        "storage_requests_per_epoch": round(mean("storage_requests"), 1),
        "storage_mb_per_epoch": round(mean("storage_bytes") / 1e6, 3),
        "rebuild_reads_per_epoch": round(mean("rebuild_reads"), 1),
        "refused_puts_per_epoch": round(mean("refused_puts"), 1),
        "cached_share_end": round(done["cached_bytes"] / dataset_bytes, 4),
        "namespace_share_end": round(done["cached_bytes"] / budget, 4) if budget else 0.0,
        "every_id_every_epoch": all(e["distinct"] == opts.n for e in epochs),
    }


def _print_row(row: dict[str, Any]) -> None:
    print(
        f"{row['loop']} {row['job']}: {row['epoch_s']:.2f} s/epoch, "
        f"{row['storage_requests_per_epoch']:.0f} storage requests/epoch, "
        f"{row['cached_share_end']:.2f} of its data set cached",
        file=sys.stderr,
    )


def _notes(opts: PlacementOptions) -> list[str]:
    return [
        f"Measured: two job processes started together, each on its own synthetic data set "
        f"of {opts.n} samples (same size, different content), one content-addressed "
        f"Redis namespace (loopback) of {opts.cache_frac:g} x the larger data set's bytes for "
        f"both, {opts.epochs} epochs of batch {opts.batch_size}; each job reads its own "
        f"modeled store, {opts.latency_ms:g} ms a request, one at a time across the job's processes.",
        f"io: no model step, no DataLoader workers; gpu: a {opts.step_ms:g} ms step a "
        "batch (a fixed wait) and two DataLoader workers, whose reads overlap the step.",
        f"open: quiver[probe={opts.probe}] (measured, applied nowhere); closed: "
        f"quiver[probe={opts.probe},placement=true] (each job publishes its probe and "
        "applies place() at its next epoch's start; a job below min_benefit 1.1 stops "
        "caching).",
        "Per job, epochs after the first (cold) one averaged: epoch_s, samples/s, storage "
        "requests (rebuild reads included: planned hits the namespace had refused or "
        "lost), refused puts. cached_share_end: the bytes of the job's data set the "
        "namespace holds once both jobs ended their last epoch (before either closed) over "
        "the data set's bytes; namespace_share_end: the same over the namespace's budget.",
    ]
