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
from typing import Any

from hotset.errors import HotsetError

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


def run(
    *,
    latencies: Sequence[float] = (2.0, 10.0),
    cache_fracs: Sequence[float] = (0.1, 0.2),
    chunk_sizes: Sequence[int] = (8, 16, 32, 64, 128),
    n: int = 4000,
    epochs: int = 3,
    workers: int = 4,
    batch_size: int = 64,
    compute_ms: float = 20.0,
    seed: int = 0,
    progress: bool = True,
    concurrency: int = 4,
    bandwidth_mb_s: float = math.inf,
) -> dict[str, Any]:
    """The main grid, then the chunk-size sweep (at the first latency and the smallest
    cache share); one row per loader measured."""
    from hotset.bench.loader import run as loader_run
    from hotset.bench.loader import with_rates
    from hotset.bench.workloads import PACK_CHUNK_SIZE

    for size in chunk_sizes:
        if size < 1:
            raise HotsetError(f"bench brand: chunk sizes must be >= 1, got {size}")
    common: dict[str, Any] = {
        "n": n,
        "epochs": epochs,
        "workers": workers,
        "batch_size": batch_size,
        "compute_ms": compute_ms,
        "seed": seed,
    }
    if not latencies or not cache_fracs:
        raise HotsetError("bench brand: give at least one latency and one cache share")
    sweep_latency_ms, sweep_cache_frac = latencies[0], min(cache_fracs)
    table: list[dict[str, Any]] = []
    cells: list[tuple[str, float, float, int, tuple[str, ...]]] = [
        ("main", lat, frac, PACK_CHUNK_SIZE, ("pytorch", "brand"))
        for lat in latencies
        for frac in cache_fracs
    ]
    cells += [
        ("chunk sweep", sweep_latency_ms, sweep_cache_frac, cs, ("brand",)) for cs in chunk_sizes
    ]
    for part, latency, frac, chunk, systems in cells:
        if progress:
            print(
                f"brand bench: {part} {latency:g} ms, cache {frac:g}, chunks of {chunk}",
                file=sys.stderr,
            )
        result = loader_run(
            latency_ms=latency,
            cache_frac=frac,
            systems=systems,
            chunk_size=chunk,
            concurrency=concurrency,
            bandwidth_mb_s=bandwidth_mb_s,
            **common,
        )
        for row in with_rates(result["table"]):
            if part == "main" or row["name"] == "brand":
                table.append(
                    {"part": part, "latency_ms": latency, "cache_frac": frac, "chunk_size": chunk}
                    | {k: row.get(k) for k in (*_KEEP, "vs_torch", "vs_no_io")}
                )
    return {
        "params": common
        | {"sweep_latency_ms": sweep_latency_ms, "sweep_cache_frac": sweep_cache_frac}
        | {
            "concurrency": concurrency,
            "bandwidth_mb_s": None if math.isinf(bandwidth_mb_s) else bandwidth_mb_s,
        },
        "table": table,
        "notes": [
            "Measured on this machine: one modeled storage server for the whole job (the "
            f"latency per request, {concurrency} requests in flight across all workers"
            + ("" if math.isinf(bandwidth_mb_s) else f", one {bandwidth_mb_s:g} MB/s link")
            + "), "
            f"{workers} DataLoader workers, batches of {batch_size}, a {compute_ms:g} ms "
            "sleep per batch as compute.",
            "The data set is packed as Brand §3.2 says: a seeded shuffle cut into chunks "
            "of chunk_size files, one storage request per chunk; the other rows read its "
            "single files.",
            "exact hits and substitutions are never merged: Brand serves any valid file of "
            "the requested slot, which counts as a substitution unless it is the file asked.",
        ],
    }
