"""``hotset bench nodes``: private vs pooled caches over 1, 2, 4 ... nodes (simulated).

Each row is :func:`hotset.sim.nodes.run_nodes` for one (workload, system, node
count, scope, cache share per node), averaged over the epochs after the first.
Nothing is read or trained: the counts are the engine's decisions for every
rank, the times a cost model, and SHADE's losses come from the synthetic loss
model. The result's notes repeat what the model leaves out.

Workloads are size lists, not files: ``synth`` is ``n`` samples of log-normal
sizes around 110 kB (ImageNet's JPEGs average about that); ``imagenet`` is
ImageNet-1k's 1,281,167 training samples of that size distribution.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import click
import numpy as np

from hotset import options as typed
from hotset.errors import HotsetError
from hotset.options import cli
from hotset.sim.nodes import MODEL_LIMITS, Costs, run_nodes, scopes_for
from hotset.storage.presets import SIMULATED_DEFAULT, StoreModel
from hotset.systems.registry import parse_system

DEFAULT_SYSTEMS = ("pytorch", "lru", "minio", "shade")
IMAGENET_N = 1_281_167
MEAN_BYTES = 110_000


def workload_sizes(n: int, *, seed: int = 0) -> Any:
    """``n`` sizes, log-normal (sigma 0.5) with a mean of about 110 kB."""
    if n < 1:
        raise HotsetError(f"bench nodes: n must be positive, got {n}")
    sigma = 0.5
    mu = np.log(MEAN_BYTES) - sigma**2 / 2
    rng = np.random.default_rng([seed, 0x51E5])
    return np.maximum(1, rng.lognormal(mu, sigma, n)).astype(np.int64)


@dataclass(frozen=True)
class NodesOptions:
    """What ``bench nodes`` simulates; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike.

    ``systems`` may hold options with commas (``shade[a=1,b=2]``): the parser knows
    brackets. ``imagenet_nodes`` adds one ImageNet-sized run on that many nodes (0: none).
    """

    systems: tuple[str, ...] = field(default=DEFAULT_SYSTEMS, metadata=cli(parse=typed.systems))
    nodes: tuple[int, ...] = field(default=(1, 2, 4), metadata=cli(parse=typed.ints))
    cache_fracs: tuple[float, ...] = field(
        default=(0.1, 0.2), metadata=cli("Per node.", parse=typed.floats)
    )
    n: int = field(default=20_000, metadata=cli(type=click.IntRange(min=16)))
    epochs: int = field(default=4, metadata=cli(type=click.IntRange(min=2)))
    batch_size: int = field(default=128, metadata=cli(type=click.IntRange(min=1)))
    imagenet_nodes: int = field(
        default=0,
        metadata=cli(
            "Also ImageNet-1k sizes on this many nodes (0: skip; slow at 64).",
            type=click.IntRange(min=0),
        ),
    )
    imagenet_frac: float = field(default=0.01, metadata=cli("Per node.", type=float))
    seed: int = 0

    def __post_init__(self) -> None:
        """An unknown system (or a bad option of one) fails before any work."""
        from hotset.systems.registry import get_spec

        for spec in self.systems:
            get_spec(parse_system(spec)[0])


def run(
    opts: NodesOptions = NodesOptions(),
    *,
    store: StoreModel = SIMULATED_DEFAULT,
    progress: bool = True,
) -> dict[str, Any]:
    """Every (system, nodes, scope, cache share) on ``synth``, then optionally ImageNet-sized.

    ``store`` is each node's own storage client in the cost model (:func:`store_costs`);
    the default is the figures this suite always modeled (2 ms, 100 MB/s, 4 in flight).
    """
    n, epochs, batch_size, seed = opts.n, opts.epochs, opts.batch_size, opts.seed
    systems = opts.systems
    grid: list[tuple[str, int, int, float]] = [
        ("synth", n, k, f) for k in opts.nodes for f in opts.cache_fracs
    ]
    if opts.imagenet_nodes:
        grid.append(("imagenet", IMAGENET_N, opts.imagenet_nodes, opts.imagenet_frac))
    cost_model = store_costs(store)
    rows: list[dict[str, Any]] = []
    sizes_of: dict[int, Any] = {}
    for workload, size, k, frac in grid:
        if size not in sizes_of:
            sizes_of[size] = workload_sizes(size, seed=seed)
        sizes = sizes_of[size]
        for system in systems:
            name, options = parse_system(system)
            for scope in scopes_for(name, k):
                started = time.perf_counter()
                result = run_nodes(
                    name,
                    nodes=k,
                    scope=scope,
                    sizes=sizes,
                    cache_frac=frac,
                    epochs=epochs,
                    seed=seed,
                    batch_size=batch_size,
                    options=options,
                    costs=cost_model,
                )
                rows.append(_row(workload, system, result))
                if progress:
                    r = rows[-1]
                    print(
                        f"{workload} {system} x{k} {scope} {frac:g}: hits "
                        f"{r['exact_hit_ratio']:.3f} reads/epoch {r['storage_requests_per_epoch']:.0f}"
                        f" ({time.perf_counter() - started:.1f} s)",
                        file=sys.stderr,
                    )
    return {
        "n": n,
        "epochs": epochs,
        "batch_size_per_rank": batch_size,
        "seed": seed,
        "costs": asdict(cost_model),
        "store": store.as_dict(),
        "table": rows,
        "notes": _notes(n, store),
    }


def _notes(n: int, store: StoreModel) -> list[str]:
    """What the model is and leaves out, for the reader of the result file."""
    return [
        "Simulated: hotset.sim.nodes drives the engine for every rank in lockstep; "
        "figures are per epoch, averaged over the epochs after the first.",
        f"Store: {store.describe()}, each node's own client.",
        "scope=private: a cache of cache_frac_per_node of the data on each node; "
        "scope=pooled: one cache of nodes x that, entries placed on nodes by id hash; "
        "remote_hit_share is the share of the requests the cache served (exact hits, "
        "substitutions, fetched-ahead uses) that another node's part served.",
        f"Workloads: synth = {n} samples of log-normal sizes around {MEAN_BYTES} B; "
        f"imagenet = {IMAGENET_N} samples of the same size distribution.",
        *[f"Model: {line}." for line in MODEL_LIMITS],
    ]


def store_costs(store: StoreModel) -> Costs:
    """The cost model with ``store``'s figures for each node's storage client; the network
    and compute figures stay the model's defaults. The simulators' default store
    (:data:`~hotset.storage.presets.SIMULATED_DEFAULT`) gives exactly ``Costs()``."""
    return Costs(
        storage_latency_ms=store.latency_ms,
        storage_mb_s=store.bandwidth_mb_s,
        storage_concurrency=store.max_concurrency,
    )


def _row(workload: str, system: str, result: dict[str, Any]) -> dict[str, Any]:
    a = result["after_first"]
    requests = a["requests"]
    hits = a["exact_hits"]
    return {
        "workload": workload,
        "system": system,
        "nodes": result["nodes"],
        "scope": result["scope"],
        "cache_frac_per_node": result["cache_frac_per_node"],
        "exact_hit_ratio": hits / requests if requests else 0.0,
        "substitution_ratio": a["substitutions"] / requests if requests else 0.0,
        "remote_hit_share": a["remote_hits"] / a["cache_serves"] if a["cache_serves"] else 0.0,
        "storage_requests_per_epoch": a["storage_requests"],
        "storage_gb_per_epoch": a["storage_bytes"] / 1e9,
        "remote_gb_per_epoch": (a["remote_bytes"] + a["remote_put_bytes"]) / 1e9,
        "unique_ids_trained_per_epoch": a["unique_ids_trained"],
        "modeled_epoch_seconds": a["modeled_epoch_seconds"],
    }
