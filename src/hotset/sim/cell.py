"""One hit-ratio cell: a live-training run of one system, and Belady's bound on it.

The live-training simulator runs the system (virtual-clock store; real
decisions, real reads). Systems whose decisions cannot depend on training (no
scorer, unweighted: the baselines) run without the model, which a test holds to
the trained run's decisions exactly; importance-driven systems train a real
model, because their order is made from its losses. The run's own request
sequence is then replayed through Belady's MIN with the same budget: a bound on
the exact hits *that sequence* allowed over the whole run -- the sequence of the ids
served, substitutes included, since an exact hit is a reuse of bytes kept since an
earlier use and the first use of bytes fetched ahead is not one (see
:func:`belady_hits` for why it counts items, not bytes). The bound holds for the
whole sequence, not for a part of it: MIN may give up hits in one epoch for more
in another, so it is compared with the run's whole-run ratio.

It lives in the simulator, not in :mod:`hotset.bench.hitratio`, because both
``hotset bench hitratio`` and ``hotset advise`` (:mod:`hotset.sim.advise`) are
made of these cells, and the simulator must not import the benchmarks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hotset.engine.counters import COUNTER_KEYS, COVERAGE_KEYS
from hotset.engine.roles import NeedsFuture

__all__ = ["belady_hits", "hits_bound", "needs_training", "run_one", "train_sizes"]


def needs_training(system: str) -> bool:
    """Whether ``system``'s decisions depend on training losses (options ignored)."""
    from hotset.systems.registry import capabilities_of, parse_system

    return capabilities_of(parse_system(system)[0]).learns


def belady_hits(trace: np.ndarray, sizes: np.ndarray, capacity: int) -> np.ndarray:
    """Exact hit (bool) per access of ``trace`` under a provable Belady bound.

    No cache within ``capacity`` bytes ever holds more than ``k`` items, ``k`` the
    count of the smallest sizes that fit together; Belady's MIN (with bypass) is
    optimal for a cache of ``k`` items, so its hits bound every byte-feasible
    policy. (Farthest-next-use applied to bytes directly is only a heuristic for
    variable sizes, and a real policy can beat it.)
    """
    from hotset.engine.budget import Budget
    from hotset.engine.outcome import Outcome
    from hotset.policies import make_policy

    ordered = np.sort(np.asarray(sizes, dtype=np.int64))
    k = int(np.searchsorted(np.cumsum(ordered), capacity, side="right"))
    policy = make_policy("belady", Budget(capacity_items=k))
    assert isinstance(policy, NeedsFuture)  # Belady's MIN is the offline bound
    policy.set_future(trace)
    return policy.replay(trace) == int(Outcome.HIT)


def hits_bound(trace: np.ndarray, sizes: np.ndarray, capacity: int, *, count_from: int) -> int:
    """The most exact hits any cache within ``capacity`` bytes can have at positions
    ``count_from`` and later of ``trace`` (a bound for the epochs after the first).

    Why not Belady's hits after ``count_from``: MIN maximizes the hits of the whole
    sequence and may give up later ones for earlier ones, so its later hits bound
    nothing. An exact hit at position ``p`` keeps its id from the id's previous use
    ``q`` to ``p``: an interval holding one of the ``k`` items a cache of ``capacity``
    bytes can hold (:func:`belady_hits`). The most such intervals ending at or after
    ``count_from`` that fit ``k`` slots at once is a maximum interval scheduling on
    ``k`` machines, which the greedy by end (each interval to the free slot that
    became free latest) solves exactly; over every interval it equals MIN's hits.
    """
    import bisect

    ordered = np.sort(np.asarray(sizes, dtype=np.int64))
    k = int(np.searchsorted(np.cumsum(ordered), capacity, side="right"))
    if k == 0:
        return 0
    trace = np.asarray(trace, dtype=np.int64)
    last: dict[int, int] = {}
    intervals: list[tuple[int, int]] = []  # (end, start), by end: positions ascend
    for p, sid in enumerate(trace.tolist()):
        q = last.get(sid)
        if q is not None and p >= count_from:
            intervals.append((p, q))
        last[sid] = p
    free: list[int] = []  # when each slot in use became free (its last interval's end)
    used = hits = 0
    for end, start in intervals:
        i = bisect.bisect_right(free, start)  # slots free by ``start``: free[:i]
        if i:
            free.pop(i - 1)  # the one freed latest: keeps earlier ones for earlier starts
        elif used < k:
            used += 1
        else:
            continue
        bisect.insort(free, end)
        hits += 1
    return hits


def train_sizes(dataset: Path, seed: int, val_frac: float) -> np.ndarray:
    """Byte sizes of the training ids, as the simulator numbers them."""
    from hotset.data import Manifest
    from hotset.data.stratify import stratified_split

    manifest = Manifest.load(dataset)
    train_rows, _ = stratified_split(np.asarray(manifest.labels), val_frac=val_frac, seed=seed)
    return np.asarray(manifest.sizes, dtype=np.int64)[train_rows]


def run_one(
    system: str,
    dataset: Path,
    *,
    cache_frac: float,
    epochs: int,
    seed: int,
    workload: str,
    latency_ms: float = 2.0,
    bandwidth_mb_s: float = 100.0,
    concurrency: int = 4,
) -> dict[str, Any]:
    """One (workload, system, fraction) cell: its counts and its Belady bound.

    ``system`` may carry options (``shade[coverage_floor=0.05]``).
    """
    from hotset.sim.live import LiveOptions, run_live
    from hotset.systems.registry import parse_system

    name, options = parse_system(system)
    trained = needs_training(name)
    result = run_live(
        LiveOptions(
            system=name,
            options=options or None,
            dataset=str(dataset),
            cache_frac=cache_frac,
            epochs=epochs,
            seed=seed,
            train=trained,
            record_accesses=True,
            latency_ms=latency_ms,
            bandwidth_mb_s=bandwidth_mb_s,
            concurrency=concurrency,
        )
    )
    result.pop("accesses")
    # the ids actually served, substitutes included: an exact hit is a reuse of bytes
    # kept since an earlier use, and a substitute's use is a use (hotset.engine.ahead)
    served = result.pop("served")
    sizes = train_sizes(dataset, seed, result["config"]["val_frac"])
    return {
        "workload": workload,
        "system": system,
        "cache_frac": cache_frac,
        "trained": trained,
        **_cell_counts(result, served, sizes),
    }


def _cell_counts(
    result: dict[str, Any], served: list[list[int]], sizes: np.ndarray
) -> dict[str, Any]:
    """A cell's numbers from a live run's ``result`` and the ids each epoch ``served``:
    the epochs after the first (the warm cache) against :func:`hits_bound`, the whole
    run against Belady's hits, and the coverage beside them."""
    trace = np.concatenate([np.asarray(a, dtype=np.int64) for a in served])
    bound = belady_hits(trace, sizes, result["capacity_bytes"])
    rows = result["epochs"]
    later = rows[1:] or rows
    first = len(served[0]) if len(rows) > 1 else 0
    later_bound = hits_bound(trace, sizes, result["capacity_bytes"], count_from=first)
    requests_later = sum(r["requests"] for r in later)
    # epochs that read a selection (IIS, ImPACT after its warm-up): fewer requests than ids
    selective = [r for r in later if r["requests"] < result["n_train"]]

    def per_epoch(key: str) -> float:
        return round(sum(r[key] for r in later) / len(later), 1)

    def ratio(key: str) -> float:
        return round(sum(r[key] for r in later) / requests_later, 4)

    return {
        "exact_hit_ratio": ratio("exact_hits"),
        # the bound on exact_hit_ratio (the same epochs): see hits_bound
        "exact_hit_bound": round(later_bound / requests_later, 4),
        "substitution_ratio": ratio("substitutions"),
        "reads_epoch1": rows[0]["storage_reads"],
        "reads_per_epoch_after_first": per_epoch("storage_reads"),
        "service_ratio": _service(later),
        "service_ratio_selective": _service(selective),
        "selective_epochs": len(selective),
        "unit_reads_per_epoch_after_first": per_epoch("unit_reads"),
        "pack_reads_per_epoch_after_first": per_epoch("pack_reads"),
        "pack_bytes_per_epoch_after_first": per_epoch("pack_bytes"),
        "policy": result["policy"],
        "fetched_ahead_ratio": ratio("fetched_ahead"),
        "storage_requests_per_epoch_after_first": per_epoch("storage_requests"),
        "unique_ids_trained_after_first": per_epoch("unique_ids_trained"),
        # coverage as a share, so a plot can set it beside the hit ratios: a cache that
        # serves much by training a third of the data must show the third
        "n_train": result["n_train"],
        "coverage_after_first": round(
            sum(r["unique_ids_trained"] for r in later) / len(later) / result["n_train"], 4
        ),
        "never_trained_at_end": rows[-1]["never_trained"],
        "modeled_epoch_seconds_after_first": round(
            sum(r["modeled_epoch_seconds"] for r in later) / len(later), 4
        ),
        "exact_hit_ratio_all": round(sum(r["exact_hits"] for r in rows) / len(trace), 4),
        "belady_hit_ratio_all": round(float(bound.mean()), 4),
        "final_val_accuracy": result["totals"]["final_val_accuracy"],
        "per_epoch": [{k: r[k] for k in (*COUNTER_KEYS, *COVERAGE_KEYS)} for r in rows],
    }


def _service(epochs: list[dict[str, Any]]) -> float | None:
    """The share of requests served from the cache, exactly or by a substitute (None
    without requests)."""
    asked = sum(r["requests"] for r in epochs)
    served = sum(r["exact_hits"] + r["substitutions"] for r in epochs)
    return round(served / asked, 4) if asked else None
