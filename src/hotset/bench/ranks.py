"""``hotset bench ranks``: private vs pooled caches with real ranks on this machine (measured).

The simulated ``bench nodes`` answers for many nodes; this suite checks the same
comparison with the real thing at the sizes one machine holds: ``world``
processes in a torch.distributed (gloo) group, each a hotset loader over one
modeled storage server shared by the whole job
(:class:`~hotset.storage.shared_throttle.SharedThrottledStore`), with

* ``private``: each rank its own shared-memory cache of ``cache_frac`` of the
  data set's bytes (what a node's memory holds);
* ``pooled``: one Redis namespace (a redis-server this suite starts on loopback)
  of ``world * cache_frac``, which the ranks join and split.

Rows count, per epoch after the first and summed over the ranks: exact hits,
pool hits (planned misses found in the pool), storage requests, refused puts,
and the distinct ids trained (the union of the ranks'). Learning systems get
seeded random losses, as in ``bench loader``. Ranks are processes on one
machine: "remote" pool entries are one loopback hop away, not a network's.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np

from hotset import options as typed
from hotset.errors import HotsetError
from hotset.options import cli
from hotset.sim.nodes import scopes_for
from hotset.storage.presets import StoreModel

DEFAULT_SYSTEMS = ("pytorch", "lru", "minio", "shade")
#: the store modeled without ``--store``: what the committed results used (an unlimited link)
DEFAULT_STORE = StoreModel(latency_ms=2.0, bandwidth_mb_s=math.inf, max_concurrency=4)


def _rank_main(rank: int, job: dict[str, Any]) -> None:
    """One rank: train ``epochs`` epochs with random losses; write its report and ids."""
    import torch
    import torch.distributed as dist

    from hotset.torch import loader as make_loader
    from hotset.torch import open_dataset

    world = job["world"]
    dist.init_process_group(
        "gloo", init_method=f"file://{job['init_file']}", rank=rank, world_size=world
    )
    try:
        data = open_dataset(job["dataset"], retries=0).with_store(job["store"])
        served: list[list[int]] = []
        with make_loader(
            data,
            system=job["system"],
            cache=job["cache"],
            cache_bytes=job["cache_bytes"],
            namespace=job["namespace"],
            # "private" stands for one node per rank: a cache of its own each
            cache_scope="rank",
            batch_size=job["batch_size"],
            seed=job["seed"],
            check_store="off",
        ) as ld:
            rng = np.random.default_rng([job["seed"], rank])
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
        counts = getattr(ld.system.policy, "counts", {})  # Brand across ranks (§3.4)
        out = {"rows": rows, "served": served, "wall": wall, "counts": counts}
        Path(job["out"], f"rank{rank}.json").write_text(json.dumps(out, default=str))
    finally:
        dist.destroy_process_group()


def _one_run(
    *,
    world: int,
    scope: str,
    system: str,
    cache_frac: float,
    dataset: str,
    store: Any,
    redis_url: str,
    epochs: int,
    batch_size: int,
    seed: int,
    work: Path,
    run_id: int,
) -> dict[str, Any]:
    import torch.multiprocessing as mp

    out = work / f"run{run_id}"
    out.mkdir()
    pooled = scope == "pooled"
    job = {
        "world": world,
        "init_file": str(out / "pg"),
        "dataset": dataset,
        "store": store,
        "system": system,
        "cache": redis_url if pooled else None,
        "cache_bytes": min(1.0, cache_frac * world) if pooled else cache_frac,
        "namespace": f"bench-ranks-{run_id}" if pooled else None,
        "batch_size": batch_size,
        "seed": seed,
        "epochs": epochs,
        "out": str(out),
    }
    started = time.perf_counter()
    mp.spawn(_rank_main, args=(job,), nprocs=world, join=True)
    wall = time.perf_counter() - started
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]
    later = range(1, epochs)

    def total(key: str) -> float:
        return sum(r["rows"][e][key] for r in ranks for e in later) / len(later)

    requests = total("requests")
    union = [len({i for r in ranks for i in r["served"][e]}) for e in later]
    return {
        "world": world,
        "scope": scope,
        "system": system,
        "cache_frac_per_rank": cache_frac,
        "exact_hit_ratio": round(total("exact_hits") / requests, 4) if requests else 0.0,
        "pool_hit_ratio": round(total("pool_hits") / requests, 4) if requests else 0.0,
        "storage_requests_per_epoch": round(total("storage_requests") + total("rebuild_reads"), 1),
        "refused_puts_per_epoch": round(total("refused_puts"), 1),
        "unique_ids_trained_per_epoch": round(sum(union) / len(union), 1),
        "samples_per_s": round(
            sum(sum(row["requests"] for row in r["rows"]) for r in ranks)
            / max(r["wall"] for r in ranks),
            1,
        ),
        "wall_seconds_with_startup": round(wall, 2),
    } | _brand_counts(ranks, epochs)


def _brand_counts(ranks: list[dict[str, Any]], epochs: int) -> dict[str, Any]:
    """Brand's own counters (remote requests, prefetch hits), per epoch over all ranks."""
    keys = sorted({k for r in ranks for k in r["counts"]})
    return {f"{k}_per_epoch": round(sum(r["counts"][k] for r in ranks) / epochs, 1) for k in keys}


@dataclass(frozen=True)
class RanksOptions:
    """What ``bench ranks`` compares; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike."""

    worlds: tuple[int, ...] = field(
        default=(1, 2), metadata=cli("World sizes (ranks).", parse=typed.ints)
    )
    systems: tuple[str, ...] = field(default=DEFAULT_SYSTEMS, metadata=cli(parse=typed.systems))
    cache_fracs: tuple[float, ...] = field(
        default=(0.1, 0.2), metadata=cli("Per rank.", parse=typed.floats)
    )
    n: int = field(default=2000, metadata=cli(type=click.IntRange(min=64)))
    epochs: int = field(default=3, metadata=cli(type=click.IntRange(min=2)))
    batch_size: int = field(default=32, metadata=cli(type=click.IntRange(min=1)))
    seed: int = 0

    def __post_init__(self) -> None:
        from hotset.systems.registry import get_spec, parse_system

        for spec in self.systems:
            get_spec(parse_system(spec)[0])
        if self.epochs < 2:
            raise HotsetError(
                f"bench ranks: epochs must be >= 2 (rows count after the first), got {self.epochs}"
            )
        for world in self.worlds:
            if world < 1:
                raise HotsetError(f"bench ranks: a world size must be >= 1, got {world}")
        for frac in self.cache_fracs:
            if not 0 < frac <= 1:
                raise HotsetError(f"bench ranks: a cache share must be in (0, 1], got {frac!r}")


def run(
    opts: RanksOptions = RanksOptions(),
    *,
    store: StoreModel = DEFAULT_STORE,
    progress: bool = True,
) -> dict[str, Any]:
    """Every (world, scope, system, cache share); pooled only where there are 2+ ranks.

    ``store`` is the one modeled server every run's ranks share (a fresh schedule per run).
    """
    from hotset.bench.redis_server import local_redis
    from hotset.bench.workloads import ensure_packed, needs_chunks
    from hotset.data import SynthConfig, make_synth
    from hotset.storage.local import LocalStore
    from hotset.storage.shared_throttle import SharedThrottledStore

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hotset-ranks-") as tmp, local_redis() as redis:
        work = Path(tmp)
        dataset = str(work / "synth")
        make_synth(dataset, SynthConfig(n=opts.n, image_size=16, seed=opts.seed), workers=1)
        if needs_chunks(opts.systems):  # Brand: a seeded shuffle cut into chunks (§3.2)
            ensure_packed(dataset, seed=opts.seed)
        inner = LocalStore(dataset)
        for world in opts.worlds:
            for frac in opts.cache_fracs:
                for system in opts.systems:
                    for scope in scopes_for(system, world):
                        server = SharedThrottledStore(
                            inner,
                            latency_ms=store.latency_ms,
                            bandwidth_mb_s=store.bandwidth_mb_s,
                            max_concurrency=store.max_concurrency,
                            context="spawn",
                        )
                        row = _one_run(
                            world=world,
                            scope=scope,
                            system=system,
                            cache_frac=frac,
                            dataset=dataset,
                            store=server,
                            redis_url=redis.url,
                            epochs=opts.epochs,
                            batch_size=opts.batch_size,
                            seed=opts.seed,
                            work=work,
                            run_id=len(rows),
                        )
                        rows.append(row)
                        if progress:
                            print(
                                f"{system} x{world} {scope} {frac:g}: hits "
                                f"{row['exact_hit_ratio']:.3f} pool {row['pool_hit_ratio']:.3f} "
                                f"reads/epoch {row['storage_requests_per_epoch']:.0f}",
                                file=sys.stderr,
                            )
    return {
        "params": {
            "n": opts.n,
            "epochs": opts.epochs,
            "batch_size": opts.batch_size,
            "latency_ms": store.latency_ms,
            "concurrency": store.max_concurrency,
            "bandwidth_mb_s": store.as_dict()["bandwidth_mb_s"],
            "seed": opts.seed,
        },
        "store": store.as_dict(),
        "table": rows,
        "notes": [
            "Measured: real ranks (processes in a gloo group) on this machine, each a hotset "
            "loader (no DataLoader workers) over one modeled storage server for the whole "
            f"job ({store.describe()}).",
            "private: a shared-memory cache of cache_frac_per_rank per rank; pooled: one "
            "Redis namespace (loopback) of world x that, split between the ranks.",
            "Per epoch after the first, summed over ranks; pool_hit_ratio counts planned "
            "misses found in the pool (never counted as exact hits); unique ids are the "
            "union over ranks.",
        ],
    }
