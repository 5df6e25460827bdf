"""How much cache does *my* data set need? The simulator over a grid of cache sizes.

``hotset advise`` answers that for the user's own data set (sizes from its
manifest) and storage latency, per system: the exact-hit ratio (substitutions
apart, never merged), storage reads and modeled epoch time at each size, with
coverage (distinct samples trained per epoch) next to every hit ratio, Belady's
bound on the same request sequence, the knee of the curve, and the smallest
size reaching a target hit ratio.

Everything here is **simulated**: each cell is the live-training simulator
(:func:`hotset.sim.live.run_live`): a virtual-clock store with ``latency_ms``
per request and ``bandwidth_mb_s``, 4 requests in flight, and no compute time,
so "modeled epoch seconds" is the I/O wait a training epoch would have with
nothing to overlap it. Systems that learn from losses train the simulator's
small model on the data, so their orders are real ones. One cell is
:func:`hotset.bench.hitratio.run_one`, the benchmark's.

The knee is the grid point farthest above the chord from the smallest to the
largest size, both axes scaled to [0, 1] (the "kneedle" idea): past it, each
extra byte of cache buys less hit ratio than on average.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hotset.errors import HotsetError

__all__ = ["DEFAULT_FRACS", "DEFAULT_SYSTEMS", "advise", "knee", "smallest_reaching"]

DEFAULT_SYSTEMS = ("lru", "minio", "shade")
DEFAULT_FRACS = (0.05, 0.1, 0.2, 0.4, 0.6, 0.8)


def knee(fracs: Sequence[float], hits: Sequence[float]) -> float | None:
    """The grid point farthest above the chord (scaled axes); None if the curve is flat."""
    if len(fracs) < 3:
        return None
    f0, f1 = fracs[0], fracs[-1]
    h0, h1 = hits[0], hits[-1]
    if f1 <= f0 or h1 <= h0:
        return None
    gaps = [
        ((h - h0) / (h1 - h0)) - ((f - f0) / (f1 - f0)) for f, h in zip(fracs, hits, strict=True)
    ]
    best = max(range(len(gaps)), key=lambda i: gaps[i])
    return float(fracs[best]) if gaps[best] > 0 else None


def smallest_reaching(fracs: Sequence[float], hits: Sequence[float], target: float) -> float | None:
    """The smallest size whose exact-hit ratio reaches ``target`` (None: no size does)."""
    for frac, hit in sorted(zip(fracs, hits, strict=True)):
        if hit >= target:
            return float(frac)
    return None


def _check(systems: Sequence[str], fracs: Sequence[float], target: float, epochs: int) -> None:
    from hotset.systems.registry import parse_system

    if not systems:
        raise HotsetError("advise: give at least one system")
    for system in systems:
        parse_system(system)  # unknown names fail before any work
    if not fracs:
        raise HotsetError("advise: give at least one cache size")
    for frac in fracs:
        if not 0 < frac <= 1:
            raise HotsetError(f"advise: cache sizes are fractions in (0, 1], got {frac!r}")
    if not 0 < target <= 1:
        raise HotsetError(f"advise: target must be a hit ratio in (0, 1], got {target!r}")
    if epochs < 2:
        raise HotsetError(f"advise: epochs must be >= 2 (the first only fills), got {epochs}")


def advise(
    dataset: str | Path,
    *,
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    fracs: Sequence[float] = DEFAULT_FRACS,
    epochs: int = 4,
    seed: int = 0,
    latency_ms: float = 2.0,
    bandwidth_mb_s: float = 100.0,
    target: float = 0.8,
    progress: bool = False,
) -> dict[str, Any]:
    """Every (system, size) cell and, per system, the knee and the size for ``target``."""
    from hotset.bench.hitratio import run_one

    path = Path(dataset)
    if not path.exists():
        raise HotsetError(f"advise: dataset {str(dataset)!r} does not exist")
    fracs = sorted(float(f) for f in fracs)
    _check(systems, fracs, target, epochs)
    rows = []
    cells = [(s, f) for s in systems for f in fracs]
    for i, (system, frac) in enumerate(cells, start=1):
        if progress:
            print(f"[advise] {i}/{len(cells)}: {system} at {frac:.0%}", file=sys.stderr, flush=True)
        cell = run_one(
            system,
            path,
            cache_frac=frac,
            epochs=epochs,
            seed=seed,
            workload=path.name,
            latency_ms=latency_ms,
            bandwidth_mb_s=bandwidth_mb_s,
        )
        cell.pop("per_epoch")
        rows.append(cell)
    summary = []
    for system in systems:
        mine = [r for r in rows if r["system"] == system]
        hits = [r["exact_hit_ratio"] for r in mine]
        summary.append(
            {
                "system": system,
                "knee": knee(fracs, hits),
                f"size_for_{target:g}": smallest_reaching(fracs, hits, target),
                "best_exact_hit_ratio": max(hits),
            }
        )
    return {
        "dataset": str(path),
        "params": {
            "systems": list(systems),
            "fracs": fracs,
            "epochs": epochs,
            "seed": seed,
            "latency_ms": latency_ms,
            "bandwidth_mb_s": bandwidth_mb_s,
            "target": target,
        },
        "table": rows,
        "summary": summary,
        "notes": [
            "Simulated: a virtual-clock store with the given latency and bandwidth, 4 requests "
            "in flight, no compute; modeled epoch seconds are I/O wait only.",
            "exact_hit_ratio, substitution_ratio and reads count epochs 2..E (the first fills); "
            "unique_ids_trained_after_first is coverage; belady_hit_ratio_all is Belady's MIN "
            "on the row's own request sequence, over the whole run.",
        ],
    }
