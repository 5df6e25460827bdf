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
:func:`hotset.sim.cell.run_one`, as in the hitratio benchmark.

The knee is the grid point farthest above the chord from the smallest to the
largest size, both axes scaled to [0, 1] (the "kneedle" idea), when it lies
more than 0.05 above it: past it, each extra byte of cache buys less hit ratio
than on average. It is always one of the grid's sizes (never an interpolation);
there is none when the curve is flat or no point lies that far above the chord
(a straight line such as MinIO's, or a convex one such as LRU's).

Storage reads are given both as requests and as bytes per epoch, because a
system that prefers small samples reads fewer bytes for the same count; cache
sizes are reported as bytes too, so "how much memory for 80% hits" has an
answer in bytes, not only a fraction.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hotset.errors import HotsetError

__all__ = [
    "BOUND_NOTE",
    "DEFAULT_FRACS",
    "DEFAULT_SYSTEMS",
    "KNEE_NOTE",
    "MODEL_NOTE",
    "advise",
    "knee",
    "smallest_reaching",
]

DEFAULT_SYSTEMS = ("lru", "minio", "shade")
DEFAULT_FRACS = (0.05, 0.1, 0.2, 0.4, 0.6, 0.8)

# Shown with every table, so a reader never takes modeled seconds for measured ones.
MODEL_NOTE = (
    "Simulated: a virtual-clock store at {latency_ms:g} ms per request and "
    "{bandwidth_mb_s:g} MB/s, {concurrency} requests in flight, no compute time; each step waits "
    "for its misses, so modeled epoch seconds are the I/O wait of an epoch, not measured."
)
BOUND_NOTE = (
    "exact hits, bound, substituted and fetched ahead count epochs 2..E (the first only "
    "fills): exact hits are requests served from bytes kept since an earlier use; fetched "
    "ahead the first use of bytes read before they were asked for (paid in requests/epoch "
    "and bytes read/epoch); bound is the most exact hits any cache of that size could have "
    "in those epochs on the row's own served ids; belady (run) is Belady's MIN on them over "
    "every epoch, the bound on exact (run). A bound caps only the ratio left of it."
)
KNEE_NOTE = (
    "Knee: the grid size farthest above the chord from the smallest to the largest size "
    "(both axes scaled to [0, 1]), if it lies more than 0.05 above; past it each extra byte "
    "buys less hit ratio than average."
)


def knee(fracs: Sequence[float], hits: Sequence[float], *, min_gap: float = 0.05) -> float | None:
    """The grid point farthest above the chord (scaled axes); None if there is no bend.

    ``min_gap`` (in scaled units) keeps a straight line with sampling noise --
    MinIO's hits equal its cache share -- from being given a knee it does not have.
    """
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
    return float(fracs[best]) if gaps[best] > min_gap else None


def smallest_reaching(fracs: Sequence[float], hits: Sequence[float], target: float) -> float | None:
    """The smallest size whose exact-hit ratio reaches ``target`` (None: no size does)."""
    for frac, hit in sorted(zip(fracs, hits, strict=True)):
        if hit >= target:
            return float(frac)
    return None


def _check(
    systems: Sequence[str],
    fracs: Sequence[float],
    *,
    target: float,
    epochs: int,
    seed: int,
    latency_ms: float,
    bandwidth_mb_s: float,
) -> None:
    """Fail on the first bad value, naming it, before any (minutes-long) simulation."""
    from hotset.systems.registry import parse_system

    if not systems:
        raise HotsetError("advise: give at least one system")
    for system in systems:
        parse_system(system)  # unknown names fail before any work
    if not fracs:
        raise HotsetError("advise: give at least one cache size")
    for frac in fracs:
        if not math.isfinite(frac) or not 0 < frac <= 1:
            raise HotsetError(f"advise: cache sizes are fractions in (0, 1], got {frac!r}")
    if not math.isfinite(target) or not 0 < target <= 1:
        raise HotsetError(f"advise: target must be a hit ratio in (0, 1], got {target!r}")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 2:
        raise HotsetError(
            f"advise: epochs must be an int >= 2 (the first only fills), got {epochs!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise HotsetError(f"advise: seed must be an int >= 0, got {seed!r}")
    if not math.isfinite(latency_ms) or latency_ms < 0:
        raise HotsetError(f"advise: latency_ms must be a finite number >= 0, got {latency_ms!r}")
    if not math.isfinite(bandwidth_mb_s) or bandwidth_mb_s <= 0:
        raise HotsetError(
            f"advise: bandwidth_mb_s must be a finite number > 0, got {bandwidth_mb_s!r}"
        )


def advise(
    dataset: str | Path,
    *,
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    fracs: Sequence[float] = DEFAULT_FRACS,
    epochs: int = 4,
    seed: int = 0,
    latency_ms: float = 2.0,
    bandwidth_mb_s: float = 100.0,
    concurrency: int = 4,
    target: float = 0.8,
    progress: bool = False,
) -> dict[str, Any]:
    """Every (system, size) cell and, per system, the knee and the size for ``target``.

    Pure apart from reading the data set: no printing except ``progress`` lines on
    stderr (a grid takes minutes), so the CLI, tests and notebooks share one result.
    Sizes are sorted and deduplicated, so the knee and the target answer read one curve.
    """
    from hotset.sim.cell import train_sizes

    path = Path(dataset)
    if not path.is_dir():
        raise HotsetError(
            f"advise: dataset {str(dataset)!r} does not exist (or is not a directory)"
        )
    fracs = sorted({float(f) for f in fracs})
    systems = [systems] if isinstance(systems, str) else list(systems)
    _check(
        systems,
        fracs,
        target=target,
        epochs=epochs,
        seed=seed,
        latency_ms=latency_ms,
        bandwidth_mb_s=bandwidth_mb_s,
    )
    # As the simulator holds out its validation split (its default val_frac), so
    # cache bytes here are the run's own capacity_bytes.
    train_bytes = int(train_sizes(path, seed, 0.1).sum())
    store = {"latency_ms": latency_ms, "bandwidth_mb_s": bandwidth_mb_s, "concurrency": concurrency}
    rows = []
    cells = [(s, f) for s in systems for f in fracs]
    for i, (system, frac) in enumerate(cells, start=1):
        if progress:
            print(f"[advise] {i}/{len(cells)}: {system} at {frac:.0%}", file=sys.stderr, flush=True)
        rows.append(
            _run_cell(
                system, path, frac, epochs=epochs, seed=seed, train_bytes=train_bytes, store=store
            )
        )
    return {
        "dataset": str(path),
        "params": {
            "systems": list(systems),
            "fracs": fracs,
            "epochs": epochs,
            "seed": seed,
            **store,
            "target": target,
        },
        "train_bytes": train_bytes,
        "table": rows,
        "summary": [_summary(system, fracs, rows, target, train_bytes) for system in systems],
        "notes": _notes(store),
    }


def _run_cell(
    system: str,
    path: Path,
    frac: float,
    *,
    epochs: int,
    seed: int,
    train_bytes: int,
    store: dict[str, Any],
) -> dict[str, Any]:
    """One simulated (system, size) cell, with the sizes a reader asks about in bytes.

    The per-epoch list is dropped from the row (it would dwarf the table); only the
    mean bytes read over epochs 2..E stay, since the first epoch only fills the cache.
    """
    from hotset.sim.cell import run_one

    cell = run_one(
        system,
        path,
        cache_frac=frac,
        epochs=epochs,
        seed=seed,
        workload=path.name,
        **store,
    )
    later = cell.pop("per_epoch")[1:]
    cell["cache_bytes"] = math.floor(frac * train_bytes)
    cell["storage_bytes_per_epoch_after_first"] = round(
        sum(r["storage_bytes"] for r in later) / len(later), 1
    )
    return cell


def _summary(
    system: str,
    fracs: Sequence[float],
    rows: Sequence[dict[str, Any]],
    target: float,
    train_bytes: int,
) -> dict[str, Any]:
    """One system's answer: its knee and the smallest size (and bytes) reaching ``target``.

    ``rows`` hold every system's cells in ``fracs`` order, so this system's hit
    ratios line up with ``fracs`` and both answers read the same curve.
    """
    hits = [r["exact_hit_ratio"] for r in rows if r["system"] == system]
    need = smallest_reaching(fracs, hits, target)
    return {
        "system": system,
        "knee": knee(fracs, hits),
        f"size_for_{target:g}": need,
        f"bytes_for_{target:g}": None if need is None else math.floor(need * train_bytes),
        "best_exact_hit_ratio": max(hits),
    }


def _notes(store: dict[str, Any]) -> list[str]:
    """What every result says about itself, so modeled seconds are never read as measured."""
    return [
        MODEL_NOTE.format(**store),
        KNEE_NOTE,
        BOUND_NOTE,
        "unique_ids_trained_after_first is coverage (coverage_after_first: over the "
        "n_train training samples); storage requests and bytes are per epoch 2..E.",
    ]
