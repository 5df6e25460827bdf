"""``hotset bench hitratio``: what each system's cache serves, against Belady's MIN.

For every workload × system × cache fraction, the live-training simulator runs
the system (virtual-clock store; real decisions, real reads). Systems whose
decisions cannot depend on training (no scorer, unweighted: the baselines) run
without the model, which a test holds to the trained run's decisions exactly;
importance-driven systems train a real model, because their order is made from
its losses. Each run's own request sequence is then replayed through Belady's MIN
with the same budget: a bound on the exact hits *that sequence* allowed over the
whole run (see :func:`belady_hits` for why it counts items, not bytes). The bound
holds for the whole sequence, not for a part of it: MIN may give up hits in one
epoch for more in another, so it is compared with the run's whole-run ratio.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hotset.bench.workloads import needs_chunks, workload_dir
from hotset.engine.counters import COUNTER_KEYS, COVERAGE_KEYS

DEFAULT_SYSTEMS = ("pytorch", "fifo", "lru", "lfu", "minio", "sh_lru", "shade", "emul_quiv")
DEFAULT_FRACS = (0.1, 0.2, 0.4, 0.6, 0.8)


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
    policy.set_future(trace)
    return policy.replay(trace) == int(Outcome.HIT)


def _train_sizes(dataset: Path, seed: int, val_frac: float) -> np.ndarray:
    """Byte sizes of the training ids, as the simulator numbers them."""
    from hotset.data import Manifest
    from hotset.sim.live import stratified_split

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
) -> dict[str, Any]:
    """One (workload, system, fraction) cell: its counts and its Belady bound.

    ``system`` may carry options (``shade[coverage_floor=0.05]``).
    """
    from hotset.sim.live import run_live
    from hotset.systems.registry import parse_system

    name, options = parse_system(system)
    trained = needs_training(name)
    result = run_live(
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
    )
    accesses = result.pop("accesses")
    trace = np.concatenate([np.asarray(a, dtype=np.int64) for a in accesses])
    sizes = _train_sizes(dataset, seed, result["config"]["val_frac"])
    bound = belady_hits(trace, sizes, result["capacity_bytes"])
    rows = result["epochs"]
    later = rows[1:] or rows
    requests_later = sum(r["requests"] for r in later)
    # epochs that read a selection (IIS, ImPACT after its warm-up): fewer requests than ids
    selective = [r for r in later if r["requests"] < result["n_train"]]

    def per_epoch(key: str) -> float:
        return round(sum(r[key] for r in later) / len(later), 1)

    def service(epochs: list[dict[str, Any]]) -> float | None:
        asked = sum(r["requests"] for r in epochs)
        served = sum(r["exact_hits"] + r["substitutions"] for r in epochs)
        return round(served / asked, 4) if asked else None

    return {
        "workload": workload,
        "system": system,
        "cache_frac": cache_frac,
        "trained": trained,
        "exact_hit_ratio": round(sum(r["exact_hits"] for r in later) / requests_later, 4),
        "substitution_ratio": round(sum(r["substitutions"] for r in later) / requests_later, 4),
        "reads_epoch1": rows[0]["storage_reads"],
        "reads_per_epoch_after_first": round(
            sum(r["storage_reads"] for r in later) / len(later), 1
        ),
        "service_ratio": service(later),
        "service_ratio_selective": service(selective),
        "selective_epochs": len(selective),
        "unit_reads_per_epoch_after_first": per_epoch("unit_reads"),
        "pack_reads_per_epoch_after_first": per_epoch("pack_reads"),
        "pack_bytes_per_epoch_after_first": per_epoch("pack_bytes"),
        "policy": result["policy"],
        "prefetched_ratio": round(sum(r["prefetched"] for r in later) / requests_later, 4),
        "storage_requests_per_epoch_after_first": round(
            sum(r["storage_requests"] for r in later) / len(later), 1
        ),
        "unique_ids_trained_after_first": round(
            sum(r["unique_ids_trained"] for r in later) / len(later), 1
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


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """One panel per workload: exact-hit ratio vs cache size; Belady bounds dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    fig, axes = plt.subplots(1, len(workloads), figsize=(6 * len(workloads), 4.2), squeeze=False)
    for ax, workload in zip(axes[0], workloads, strict=True):
        mine = [r for r in rows if r["workload"] == workload]
        for i, system in enumerate(dict.fromkeys(r["system"] for r in mine)):
            pts = sorted((r["cache_frac"], r) for r in mine if r["system"] == system)
            xs = [x for x, _ in pts]
            color = f"C{i % 10}"
            ax.plot(xs, [r["exact_hit_ratio_all"] for _, r in pts], "o-", color=color, label=system)
            ax.plot(xs, [r["belady_hit_ratio_all"] for _, r in pts], "--", color=color, lw=0.8)
        ax.set_title(
            f"{workload}: exact-hit ratio over the run (dashed: Belady on the same sequence)"
        )
        ax.title.set_fontsize(9)
        ax.set_xlabel("cache size (fraction of training bytes)")
        ax.set_ylabel("exact-hit ratio")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(
    *,
    data_dir: Path,
    workloads: Sequence[str] = ("synth", "digits"),
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    fracs: Sequence[float] = DEFAULT_FRACS,
    epochs: int = 10,
    seed: int = 0,
    synth_n: int = 20_000,
    figure: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Every cell of the sweep, a flat table, and the figure."""
    from tqdm import tqdm

    from hotset.systems.registry import parse_system

    for system in systems:
        parse_system(system)  # unknown names (or options syntax) fail before any work
    cells = [(w, s, f) for w in workloads for s in systems for f in fracs]
    packed = needs_chunks(systems)
    dirs = {
        w: workload_dir(w, data_dir=data_dir, synth_n=synth_n, progress=progress, packed=packed)
        for w in workloads
    }
    rows: list[dict[str, Any]] = []
    bar = tqdm(cells, desc="hitratio", unit="run", file=sys.stderr, disable=not progress)
    for workload, system, frac in bar:
        bar.set_postfix_str(f"{workload} {system} {frac}")
        rows.append(
            run_one(
                system, dirs[workload], cache_frac=frac, epochs=epochs, seed=seed, workload=workload
            )
        )
    if figure is not None:
        plot(rows, figure)
    table = [{k: v for k, v in r.items() if k != "per_epoch"} for r in rows]
    return {
        "params": {
            "workloads": list(workloads),
            "systems": list(systems),
            "fracs": list(fracs),
            "epochs": epochs,
            "seed": seed,
            "synth_n": synth_n,
        },
        "table": table,
        "runs": rows,
        "notes": [
            "Simulated I/O: each run is the live-training simulator (virtual-clock store, 2 ms per "
            "request, 4 in flight); hits, substitutions and reads are counted decisions and real reads.",
            "trained=True rows trained a real model (their order comes from its losses); "
            "trained=False rows are baselines whose decisions cannot depend on training, run "
            "without the model (tests/sim/test_sim_live.py holds them equal to trained runs).",
            "service_ratio = exact hits + substitutions over epochs 2..E (both are also shown "
            "apart); service_ratio_selective counts only the epochs that read a selection "
            "(fewer requests than training ids: IIS epochs, ImPACT after its warm-up). "
            "storage_requests = single-sample reads + unit_reads (chunks or packages, one "
            "request each); pack_reads/pack_bytes are what iCACHE's packer read in the "
            "background to write packages, not part of storage_requests.",
            "exact_hit_ratio and substitution_ratio count epochs 2..E and are never merged; "
            "exact_hit_ratio_all and belady_hit_ratio_all count the whole run; "
            "belady_hit_ratio_all is Belady's MIN replayed on that row's own request sequence, holding "
            "as many items as the byte budget could ever hold (the smallest samples): a proven "
            "upper bound on any policy's exact hits for that sequence.",
        ],
    }
