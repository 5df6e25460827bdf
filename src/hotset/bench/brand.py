"""``hotset bench brand``: Brand in the real loader against PyTorch and no-I/O (measured).

Brand §5 reports end-to-end speed against PyTorch (up to 4.57x) and No-I/O, and a
chunk-size sweep in which 64 files per chunk is best. This suite runs
:func:`hotset.bench.loader.run` (one modeled storage server for the whole job,
real DataLoader workers, a fixed compute sleep per batch) on a synthetic set
packed as §3.2 says (a seeded shuffle cut into chunks):

* ``part=main``: 2 and 10 ms per request, 10% and 20% cache, chunks of 64: the
  tuned DataLoader (``torch``), hotset without a cache (``pytorch``), ``brand``
  and ``no-io`` (bytes already in memory);
* ``part=chunk sweep``: brand at the first latency (2 ms) and the smallest cache
  share (10%) for chunk sizes 8 to 128.

``wasted_read_share`` is the share of the bytes read from storage that were
neither served nor kept (a chunk's files whose slots were taken or that were
consumed already).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from hotset import options as typed
from hotset.bench.loader_options import LoaderBenchOptions
from hotset.errors import HotsetError
from hotset.options import cli
from hotset.storage.presets import StoreModel

_KEEP = (
    "name",
    "samples_per_s",
    "stall_share",
    "exact_hit_ratio",
    "substitution_ratio",
    "wasted_read_share",
    "storage_requests",
    "unique_ids_trained_per_epoch",
)


#: the stores of a run without any: 2 and 10 ms per request, 4 in flight, unlimited links
DEFAULT_STORES = (
    StoreModel(latency_ms=2.0, bandwidth_mb_s=math.inf, max_concurrency=4),
    StoreModel(latency_ms=10.0, bandwidth_mb_s=math.inf, max_concurrency=4),
)


@dataclass(frozen=True)
class BrandOptions:
    """What ``bench brand`` measures over each store; the command line is generated from
    the fields (:mod:`hotset.cli.typed_options`), so a run built in Python is checked
    alike. The stores (one per latency) are :func:`run`'s ``stores``; ``batch_size``,
    ``compute_ms`` and ``seed`` are Python-only."""

    cache_fracs: tuple[float, ...] = field(default=(0.1, 0.2), metadata=cli(parse=typed.floats))
    chunk_sizes: tuple[int, ...] = field(
        default=(8, 16, 32, 64, 128), metadata=cli(parse=typed.ints)
    )
    n: int = field(default=4000, metadata=cli(type=click.IntRange(min=256)))
    epochs: int = field(default=3, metadata=cli(type=click.IntRange(min=1)))
    workers: int = field(default=4, metadata=cli(type=click.IntRange(min=0)))
    batch_size: int = 64
    compute_ms: float = 20.0
    seed: int = 0

    def __post_init__(self) -> None:
        for size in self.chunk_sizes:
            if size < 1:
                raise HotsetError(f"bench brand: chunk sizes must be >= 1, got {size}")
        if not self.cache_fracs:
            raise HotsetError("bench brand: give at least one latency and one cache share")


#: one measured cell: (part, store, cache share, chunk size, systems)
_Cell = tuple[str, StoreModel, float, int, tuple[str, ...]]


def run(
    opts: BrandOptions = BrandOptions(),
    *,
    stores: Sequence[StoreModel] = DEFAULT_STORES,
    progress: bool = True,
) -> dict[str, Any]:
    """The main grid, then the chunk-size sweep (at the first store's latency and the
    smallest cache share); one row per loader measured.

    ``stores`` are one per latency and share one link and one limit of requests in
    flight (the notes and ``params`` state them once).
    """
    from hotset.bench.loader import run as loader_run
    from hotset.bench.loader import with_rates

    if not stores:
        raise HotsetError("bench brand: give at least one latency and one cache share")
    first = stores[0]
    shared = (first.bandwidth_mb_s, first.max_concurrency)
    if any((s.bandwidth_mb_s, s.max_concurrency) != shared for s in stores):
        raise HotsetError("bench brand: the stores must share one bandwidth and concurrency")
    table: list[dict[str, Any]] = []
    for part, store, frac, chunk, systems in _cells(opts, stores):
        if progress:
            print(
                f"brand bench: {part} {store.latency_ms:g} ms, cache {frac:g}, chunks of {chunk}",
                file=sys.stderr,
            )
        loader = _loader_options(opts, cache_frac=frac, systems=systems, chunk_size=chunk)
        result = loader_run(loader, store=store)
        for row in with_rates(result["table"]):
            if part == "main" or row["name"] == "brand":
                table.append(
                    {
                        "part": part,
                        "latency_ms": store.latency_ms,
                        "cache_frac": frac,
                        "chunk_size": chunk,
                    }
                    | {k: row.get(k) for k in (*_KEEP, "vs_torch", "vs_no_io")}
                )
    return {"params": _params(opts, first), "table": table, "notes": _notes(opts, first)}


def _cells(opts: BrandOptions, stores: Sequence[StoreModel]) -> list[_Cell]:
    """The main grid (every store and cache share, chunks of the packed default, the
    loader without a cache beside Brand), then Brand alone at every chunk size, at the
    first latency and the smallest cache share."""
    from hotset.bench.workloads import PACK_CHUNK_SIZE

    cells: list[_Cell] = [
        ("main", store, frac, PACK_CHUNK_SIZE, ("pytorch", "brand"))
        for store in stores
        for frac in opts.cache_fracs
    ]
    sweep_frac = min(opts.cache_fracs)
    return cells + [
        ("chunk sweep", stores[0], sweep_frac, cs, ("brand",)) for cs in opts.chunk_sizes
    ]


def _loader_options(
    opts: BrandOptions, *, cache_frac: float, systems: tuple[str, ...], chunk_size: int
) -> LoaderBenchOptions:
    """One cell's loader options: the suite's job figures with the cell's cache share,
    systems and chunk size."""
    return LoaderBenchOptions(
        n=opts.n,
        epochs=opts.epochs,
        workers=opts.workers,
        batch_size=opts.batch_size,
        compute_ms=opts.compute_ms,
        seed=opts.seed,
        cache_frac=cache_frac,
        systems=systems,
        chunk_size=chunk_size,
    )


def _params(opts: BrandOptions, first: StoreModel) -> dict[str, Any]:
    """The result's ``params``: the job's figures, where the sweep ran, the shared link."""
    bandwidth_mb_s = first.bandwidth_mb_s
    return {
        "n": opts.n,
        "epochs": opts.epochs,
        "workers": opts.workers,
        "batch_size": opts.batch_size,
        "compute_ms": opts.compute_ms,
        "seed": opts.seed,
        "sweep_latency_ms": first.latency_ms,
        "sweep_cache_frac": min(opts.cache_fracs),
        "concurrency": first.max_concurrency,
        "bandwidth_mb_s": None if math.isinf(bandwidth_mb_s) else bandwidth_mb_s,
    }


def _notes(opts: BrandOptions, first: StoreModel) -> list[str]:
    """How the rows were measured and how to read Brand's counts."""
    bandwidth_mb_s = first.bandwidth_mb_s
    return [
        "Measured on this machine: one modeled storage server for the whole job (the "
        f"latency per request, {first.max_concurrency} requests in flight across all workers"
        + ("" if math.isinf(bandwidth_mb_s) else f", one {bandwidth_mb_s:g} MB/s link")
        + "), "
        f"{opts.workers} DataLoader workers, batches of {opts.batch_size}, a "
        f"{opts.compute_ms:g} ms sleep per batch as compute.",
        "The data set is packed as Brand §3.2 says: a seeded shuffle cut into chunks "
        "of chunk_size files, one storage request per chunk; the other rows read its "
        "single files.",
        "exact hits and substitutions are never merged: Brand serves any valid file of "
        "the requested slot, which counts as a substitution unless it is the file asked.",
    ]
