"""``hotset bench train``: time to the baseline's accuracy, and final accuracy, per system.

Each (workload, seed) first trains ``pytorch`` (random order, no cache); its final
validation accuracy is the target. Every system then trains with the same seed
(same initial weights, same split) and reports the *modeled* time at the end of
the first epoch whose accuracy reaches the target: I/O waits from the
virtual-clock store plus ``compute_ms`` of modeled compute per step. Time here is
modeled, never measured, so it does not depend on how busy the machine is; the
wall seconds of each run are reported beside it.
"""

from __future__ import annotations

import itertools
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hotset.bench.workloads import PACK_CHUNK_SIZE, needs_chunks, workload_dir
from hotset.storage.presets import SIMULATED_DEFAULT, StoreModel

DEFAULT_SYSTEMS = ("pytorch", "lru", "minio", "shade")
#: the full-data reference every row's time-to-accuracy and accuracy delta are measured against
BASELINE = "pytorch"


def time_to_target(
    epochs: list[dict[str, Any]], target: float, *, start: float = 0.0
) -> float | None:
    """Modeled seconds until the end of the first epoch at or above ``target``;
    ``start``: seconds charged before the first epoch (``sampler=rho``'s held-out models)."""
    elapsed = start
    for row in epochs:
        elapsed += row["modeled_epoch_seconds"]
        if row["val_accuracy"] is not None and row["val_accuracy"] >= target - 1e-12:
            return elapsed
    return None


def _top1(rows: list[dict[str, Any]]) -> float | None:
    """Mean ``top1_precision`` over the epochs whose order was a selection (fewer
    requests than the first, full epoch): where the estimate decided what was read."""
    full = rows[0]["requests"]
    got = [r["top1_precision"] for r in rows if "top1_precision" in r and r["requests"] < full]
    return round(statistics.fmean(got), 4) if got else None


def epoch_order_correlation(orders: Sequence[Sequence[int]]) -> float | None:
    """Mean Spearman rank correlation between consecutive epochs' trained orders.

    Why: a chunk system on label-sorted data can repeat nearly the same order
    every epoch (0.987 was seen on an unshuffled pack), which trains worse than a
    fresh permutation; two independent permutations of n ids correlate about 0
    (standard deviation 1/sqrt(n - 1)). Each pair is compared as
    :func:`hotset.sim.locality.epoch_rank_correlation` does (ids both epochs
    train, first positions); pairs with fewer than 3 such ids are skipped.
    """
    from hotset.sim.locality import epoch_rank_correlation

    values = [epoch_rank_correlation(a, b) for a, b in itertools.pairwise(orders)]
    kept = [v for v in values if v is not None]
    return round(statistics.fmean(kept), 4) if kept else None


def device_name(device: str) -> str:
    """The accelerator's name (a result says which card made it), or the CPU's."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return str(torch.cuda.get_device_name(dev))
    return f"CPU ({platform.processor() or platform.machine()})"


def _time_note(
    store: StoreModel, compute_ms: float, measured: bool, model: str, device: str
) -> str:
    """What the time columns are made of (simulated, or modeled I/O + measured compute)."""
    io = f"the live-training simulator's virtual-clock store ({store.describe()})"
    if measured:
        return (
            f"Time: modeled I/O from {io}, plus each step's compute as measured on {device} "
            f"(model {model}); accuracy is real."
        )
    return (
        f"Simulated time: {io} plus {compute_ms:g} ms of modeled compute per step; accuracy "
        f"is real (model {model} trained on {device})."
    )


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    mean = statistics.fmean(values)
    std = statistics.pstdev(values) if len(values) > 1 else 0.0
    return round(mean, 4), round(std, 4)


def run(
    *,
    data_dir: Path,
    workloads: Sequence[str] = ("digits",),
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    seeds: Sequence[int] = (0, 1, 2),
    epochs: int = 15,
    cache_frac: float = 0.2,
    compute_ms: float = 20.0,
    synth_n: int = 20_000,
    progress: bool = True,
    store: StoreModel = SIMULATED_DEFAULT,
    chunk_size: int = PACK_CHUNK_SIZE,
    model: str = "auto",
    device: str = "cpu",
    batch_size: int = 128,
    lr: float = 0.05,
    measure_compute: bool = False,
    identification: bool = True,
) -> dict[str, Any]:
    """Every (workload, seed, system) run; ``store`` is the modeled store they read from.

    ``chunk_size``: samples per chunk of the packed set the chunk systems read.
    ``model``, ``device``, ``batch_size``, ``lr``: the live simulator's training
    (``resnet18`` on ``cuda`` for the device-ready run); ``measure_compute`` charges
    each step its measured time on the device instead of ``compute_ms``;
    ``identification=False`` skips the per-epoch forward pass over every sample that
    measures ``top1_precision`` (it changes no decision and no modeled time).
    """
    from tqdm import tqdm

    from hotset.sim.live import run_live
    from hotset.systems.registry import parse_system

    started = time.perf_counter()
    specs = {system: parse_system(system) for system in systems}  # "name[opt=v,...]" too
    packed = needs_chunks(systems)
    order = [BASELINE, *[s for s in systems if s != BASELINE]]
    runs: list[dict[str, Any]] = []
    cells = [(w, seed, s) for w in workloads for seed in seeds for s in order]
    bar = tqdm(cells, desc="train", unit="run", file=sys.stderr, disable=not progress)
    targets: dict[tuple[str, int], float] = {}
    for workload, seed, system in bar:
        bar.set_postfix_str(f"{workload} seed {seed} {system}")
        dataset = workload_dir(
            workload,
            data_dir=data_dir,
            synth_n=synth_n,
            progress=progress,
            packed=packed,
            chunk_size=chunk_size,
        )
        name, options = specs.get(system) or parse_system(system)
        result = run_live(
            system=name,
            options=options or None,
            dataset=str(dataset),
            cache_frac=cache_frac,
            epochs=epochs,
            seed=seed,
            compute_ms_per_batch=compute_ms,
            measure_identification=identification,
            record_accesses=True,
            model=model,
            device=device,
            batch_size=batch_size,
            lr=lr,
            measure_compute=measure_compute,
            **store.link(),
        )
        final = result["totals"]["final_val_accuracy"]
        if system == BASELINE:
            targets[(workload, seed)] = final
        target = targets[(workload, seed)]
        rows = result["epochs"]
        setup = float((result.get("setup") or {}).get("modeled_seconds", 0.0))
        runs.append(
            {
                "workload": workload,
                "seed": seed,
                "system": system,
                "final_val_accuracy": final,
                "target": target,
                "time_to_target_s": time_to_target(rows, target, start=setup),
                "modeled_seconds": setup + sum(r["modeled_epoch_seconds"] for r in rows),
                "setup_seconds": setup,
                "storage_reads_per_epoch": sum(r["storage_reads"] for r in rows) / len(rows),
                "storage_requests_per_epoch": sum(r["storage_requests"] for r in rows) / len(rows),
                "exact_hit_ratio": result["totals"]["exact_hit_ratio_after_first"],
                "substitution_ratio": sum(r["substitutions"] for r in rows[1:])
                / max(1, sum(r["requests"] for r in rows[1:])),
                "pack_reads_per_epoch": sum(r["pack_reads"] for r in rows) / len(rows),
                "evaluated_per_epoch": sum(r["evaluated"] for r in rows) / len(rows),
                "evaluate_reads_per_epoch": sum(r["evaluate_reads"] for r in rows) / len(rows),
                "top1_precision": _top1(rows),
                "policy": result["policy"],
                "unique_ids_trained_per_epoch": sum(r["unique_ids_trained"] for r in rows)
                / len(rows),
                "never_trained_at_end": rows[-1]["never_trained"],
                "epoch_order_spearman": epoch_order_correlation(result["served"]),
                "wall_seconds": sum(r["wall_seconds"] for r in rows),
            }
        )
    table = []
    for workload in workloads:
        base = [r for r in runs if r["workload"] == workload and r["system"] == BASELINE]
        base_acc = statistics.fmean(r["final_val_accuracy"] for r in base)
        for system in order if BASELINE in systems else order[1:]:
            mine = [r for r in runs if r["workload"] == workload and r["system"] == system]
            acc_mean, acc_std = _mean_std([r["final_val_accuracy"] for r in mine])
            reached = [r["time_to_target_s"] for r in mine if r["time_to_target_s"] is not None]
            ttt_mean, ttt_std = _mean_std(reached)
            total_mean, _ = _mean_std([r["modeled_seconds"] for r in mine])
            table.append(
                {
                    "workload": workload,
                    "system": system,
                    "final_acc_mean": acc_mean,
                    "final_acc_std": acc_std,
                    "acc_delta_vs_pytorch": None
                    if acc_mean is None
                    else round(acc_mean - base_acc, 4),
                    "time_to_target_mean_s": ttt_mean,
                    "time_to_target_std_s": ttt_std,
                    "reached": f"{len(reached)}/{len(mine)}",
                    "modeled_seconds_total_mean": total_mean,
                    "setup_seconds_mean": _mean_std([r["setup_seconds"] for r in mine])[0],
                    "storage_reads_per_epoch_mean": _mean_std(
                        [r["storage_reads_per_epoch"] for r in mine]
                    )[0],
                    "storage_requests_per_epoch_mean": _mean_std(
                        [r["storage_requests_per_epoch"] for r in mine]
                    )[0],
                    "exact_hit_ratio_mean": _mean_std([r["exact_hit_ratio"] for r in mine])[0],
                    "substitution_ratio_mean": _mean_std([r["substitution_ratio"] for r in mine])[
                        0
                    ],
                    "pack_reads_per_epoch_mean": _mean_std(
                        [r["pack_reads_per_epoch"] for r in mine]
                    )[0],
                    "evaluated_per_epoch_mean": _mean_std([r["evaluated_per_epoch"] for r in mine])[
                        0
                    ],
                    "evaluate_reads_per_epoch_mean": _mean_std(
                        [r["evaluate_reads_per_epoch"] for r in mine]
                    )[0],
                    "top1_precision_mean": _mean_std(
                        [r["top1_precision"] for r in mine if r["top1_precision"] is not None]
                    )[0],
                    "unique_ids_trained_per_epoch_mean": _mean_std(
                        [r["unique_ids_trained_per_epoch"] for r in mine]
                    )[0],
                    "epoch_order_spearman_mean": _mean_std(
                        [
                            r["epoch_order_spearman"]
                            for r in mine
                            if r["epoch_order_spearman"] is not None
                        ]
                    )[0],
                    "never_trained_at_end_mean": _mean_std(
                        [float(r["never_trained_at_end"]) for r in mine]
                    )[0],
                }
            )
    return {
        "params": {
            "workloads": list(workloads),
            "systems": list(systems),
            "seeds": list(seeds),
            "epochs": epochs,
            "cache_frac": cache_frac,
            "compute_ms_per_batch": compute_ms,
            "store": store.as_dict(),
            "chunk_size": chunk_size,
            "model": model,
            "device": device,
            "batch_size": batch_size,
            "lr": lr,
            "measure_compute": measure_compute,
            "device_name": device_name(device),
            "wall_seconds_total": round(time.perf_counter() - started, 1),
        },
        "table": table,
        "runs": runs,
        "notes": [
            _time_note(store, compute_ms, measure_compute, model, device),
            "Target = the pytorch baseline's final validation accuracy at the same seed; "
            "time_to_target is the modeled time at the end of the first epoch reaching it "
            "(mean ± std over the seeds that reached it; 'reached' counts them).",
            "pack_reads: samples iCACHE's packer read in the background to write packages (their "
            "time is charged to the modeled store, not counted in storage_requests); evaluated: "
            "samples ImPACT re-evaluated before a draw (a forward pass charged a third of a "
            "step's compute per sample, its bytes from the cache where it holds them); "
            "evaluate_reads: those the cache lacked, read from the modeled store first (their "
            "wait charged; not counted in storage_requests).",
            "top1_precision: over the epochs whose order was a selection, the share of the truly "
            "top 1% samples by loss (a forward pass over all of them as the epoch is drawn, "
            "charged nothing) that the losses the sampler drew from also rank top 1% "
            "(ImPACT §V-E, Fig. 15: hybrid vs history).",
            "setup_seconds: modeled time charged before the first epoch (sampler=rho: the "
            "held-out models that give the irreducible losses, one read of every training "
            "sample and their steps); included in time_to_target and the total.",
            "epoch_order_spearman: the Spearman rank correlation between consecutive epochs' "
            "trained orders (ids in both, first positions), averaged over the run's epoch "
            "pairs; two independent permutations give about 0.",
        ],
    }
