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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from hotset import options as typed
from hotset.bench.workloads import (
    DEFAULT_DATA_DIR,
    PACK_CHUNK_SIZE,
    accuracy_note,
    check_test_n,
    needs_chunks,
    test_set_dir,
    workload_dir,
)
from hotset.errors import HotsetError
from hotset.options import cli
from hotset.storage.presets import SIMULATED_DEFAULT, StoreModel

DEFAULT_SYSTEMS = ("pytorch", "lru", "minio", "shade")
#: the full-data reference every row's time-to-accuracy and accuracy delta are measured against
BASELINE = "pytorch"
#: the live simulator's models (hotset.sim.models.MODEL_NAMES; named here so the CLI loads
#: without torch)
MODELS = ("auto", "cnn", "mlp", "resnet", "resnet18")


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


def check_seeds(seeds: Sequence[int]) -> None:
    """``--seeds`` must be non-negative (numpy's generators refuse the others, late)."""
    if any(s < 0 for s in seeds):
        raise HotsetError(f"--seeds: seeds must be non-negative, got {typed.shown(seeds)!r}")


#: ``--data-dir``'s metadata (the train suites share it): where the workloads are
#: generated once and reused
DATA_DIR = cli(type=click.Path(file_okay=False, path_type=Path))
#: ``--test-n``'s metadata (the train suites share it too)
TEST_N = cli(
    "Measure accuracy on a clean test set of N samples drawn apart from the workload "
    "(synth, synth-noisy; 0: the held-out split); reads and orders are unchanged.",
    type=click.IntRange(min=0),
)


@dataclass(frozen=True)
class TrainOptions:
    """What ``bench train`` trains; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike.

    ``chunk_size``: samples per chunk of the packed set the chunk systems read.
    ``model``, ``device``, ``batch_size``, ``lr``: the live simulator's training
    (``resnet18`` on ``cuda`` for the device-ready run); ``measure_compute`` charges
    each step its measured time on the device instead of ``compute_ms``;
    ``identification=False`` skips the per-epoch forward pass over every sample that
    measures ``top1_precision`` (it changes no decision and no modeled time).
    """

    workloads: tuple[str, ...] = field(
        default=("digits",),
        metadata=cli(
            "Comma list of synth, digits, imagenet-like, synth-sorted (label-sorted ids, "
            "packed shuffled), synth-sorted-unshuffled (packed in id order), synth-noisy (20%% "
            "labels flipped, half the samples easy: where importance sampling should pay).",
            parse=typed.texts,
        ),
    )
    systems: tuple[str, ...] = field(
        default=DEFAULT_SYSTEMS,
        metadata=cli(
            "Comma list; NAME[option=value,...] compares option settings (one row each).",
            parse=typed.systems,
        ),
    )
    seeds: tuple[int, ...] = field(default=(0, 1, 2), metadata=cli(parse=typed.ints))
    epochs: int = field(default=15, metadata=cli(type=click.IntRange(min=1)))
    cache_frac: float = field(
        default=0.2, metadata=cli(type=click.FloatRange(min=0, max=1, min_open=True))
    )
    compute_ms: float = field(default=20.0, metadata=cli(type=click.FloatRange(min=0)))
    measure_compute: bool = field(
        default=False,
        metadata=cli(
            "Charge each step its measured time on --device instead of --compute-ms.",
            switch=False,
        ),
    )
    chunk_size: int = field(
        default=PACK_CHUNK_SIZE,
        metadata=cli(
            "Samples per chunk of the packed set the chunk systems read.",
            type=click.IntRange(min=1),
        ),
    )
    model: str = field(
        default="auto",
        metadata=cli(
            "The live simulator's model (resnet18: CIFAR-style ResNet-18).",
            type=click.Choice(MODELS),
        ),
    )
    device: str = field(default="cpu", metadata=cli("Torch device to train on."))
    batch_size: int = field(default=128, metadata=cli(type=click.IntRange(min=1)))
    lr: float = field(default=0.05, metadata=cli(type=click.FloatRange(min=0, min_open=True)))
    identification: bool = field(
        default=True,
        metadata=cli("Measure top1_precision with a forward pass over every sample each epoch."),
    )
    synth_n: int = field(default=20_000, metadata=cli(type=click.IntRange(min=200)))
    data_dir: Path = field(default=DEFAULT_DATA_DIR, metadata=DATA_DIR)
    test_n: int = field(default=0, metadata=TEST_N)

    def __post_init__(self) -> None:
        """A negative seed, an unknown system or a test set a workload cannot have fails
        before any training, naming itself."""
        from hotset.systems.registry import parse_system

        check_seeds(self.seeds)
        check_test_n(self.test_n, self.workloads)
        for system in self.systems:
            parse_system(system)  # "name[opt=v,...]" too


def run(
    opts: TrainOptions = TrainOptions(),
    *,
    progress: bool = True,
    store: StoreModel = SIMULATED_DEFAULT,
) -> dict[str, Any]:
    """Every (workload, seed, system) run (:class:`TrainOptions`); ``store`` is the
    modeled store they read from."""
    from tqdm import tqdm

    started = time.perf_counter()
    order = [BASELINE, *[s for s in opts.systems if s != BASELINE]]
    runs: list[dict[str, Any]] = []
    cells = [(w, seed, s) for w in opts.workloads for seed in opts.seeds for s in order]
    bar = tqdm(cells, desc="train", unit="run", file=sys.stderr, disable=not progress)
    targets: dict[tuple[str, int], float] = {}
    packed = needs_chunks(opts.systems)
    tests = {w: test_set_dir(w, data_dir=opts.data_dir, n=opts.test_n, progress=progress)
             for w in opts.workloads if opts.test_n}  # fmt: skip
    for workload, seed, system in bar:
        bar.set_postfix_str(f"{workload} seed {seed} {system}")
        dataset = workload_dir(
            workload,
            data_dir=opts.data_dir,
            synth_n=opts.synth_n,
            progress=progress,
            packed=packed,
            chunk_size=opts.chunk_size,
        )
        result = _train_one(opts, store, system, dataset, seed, tests.get(workload))
        if system == BASELINE:
            targets[(workload, seed)] = result["totals"]["final_val_accuracy"]
        runs.append(_run_row(workload, seed, system, result, targets[(workload, seed)]))
    shown = order if BASELINE in opts.systems else order[1:]
    table = [_table_row(workload, system, runs) for workload in opts.workloads for system in shown]
    return {
        "params": _params(opts, store, started),
        "table": table,
        "runs": runs,
        "notes": [
            _time_note(store, opts.compute_ms, opts.measure_compute, opts.model, opts.device),
            accuracy_note(opts.test_n),
            *NOTES,
        ],
    }


def _train_one(
    opts: TrainOptions,
    store: StoreModel,
    system: str,
    dataset: Path,
    seed: int,
    test: Path | None = None,
) -> dict[str, Any]:
    """One live-simulator run of ``system`` (a spec, options and all) at ``seed``;
    ``test``: the test set accuracy is measured on (None: the held-out split)."""
    from hotset.sim.live import LiveOptions, run_live
    from hotset.systems.registry import parse_system

    name, options = parse_system(system)
    return run_live(
        LiveOptions(
            system=name,
            options=options or None,
            dataset=str(dataset),
            cache_frac=opts.cache_frac,
            epochs=opts.epochs,
            seed=seed,
            compute_ms_per_batch=opts.compute_ms,
            measure_identification=opts.identification,
            record_accesses=True,
            model=opts.model,
            device=opts.device,
            batch_size=opts.batch_size,
            lr=opts.lr,
            measure_compute=opts.measure_compute,
            test_dataset=None if test is None else str(test),
            **store.link(),
        )
    )


def _run_row(
    workload: str, seed: int, system: str, result: dict[str, Any], target: float
) -> dict[str, Any]:
    """One run's figures, its epochs averaged; ``target``: the baseline's final accuracy
    at this (workload, seed), which its time to target is measured against."""
    rows = result["epochs"]
    setup = float((result.get("setup") or {}).get("modeled_seconds", 0.0))

    def per_epoch(key: str) -> float:
        return sum(r[key] for r in rows) / len(rows)

    return {
        "workload": workload,
        "seed": seed,
        "system": system,
        "final_val_accuracy": result["totals"]["final_val_accuracy"],
        "target": target,
        "time_to_target_s": time_to_target(rows, target, start=setup),
        "modeled_seconds": setup + sum(r["modeled_epoch_seconds"] for r in rows),
        "setup_seconds": setup,
        "storage_reads_per_epoch": per_epoch("storage_reads"),
        "storage_requests_per_epoch": per_epoch("storage_requests"),
        "exact_hit_ratio": result["totals"]["exact_hit_ratio_after_first"],
        "substitution_ratio": sum(r["substitutions"] for r in rows[1:])
        / max(1, sum(r["requests"] for r in rows[1:])),
        "pack_reads_per_epoch": per_epoch("pack_reads"),
        "evaluated_per_epoch": per_epoch("evaluated"),
        "evaluate_reads_per_epoch": per_epoch("evaluate_reads"),
        "top1_precision": _top1(rows),
        "policy": result["policy"],
        "unique_ids_trained_per_epoch": per_epoch("unique_ids_trained"),
        "never_trained_at_end": rows[-1]["never_trained"],
        "epoch_order_spearman": epoch_order_correlation(result["served"]),
        "wall_seconds": sum(r["wall_seconds"] for r in rows),
    }


#: the run figures a table row gives the mean of (over the seeds), and its key for each
_MEANS = {
    "setup_seconds": "setup_seconds_mean",
    "storage_reads_per_epoch": "storage_reads_per_epoch_mean",
    "storage_requests_per_epoch": "storage_requests_per_epoch_mean",
    "exact_hit_ratio": "exact_hit_ratio_mean",
    "substitution_ratio": "substitution_ratio_mean",
    "pack_reads_per_epoch": "pack_reads_per_epoch_mean",
    "evaluated_per_epoch": "evaluated_per_epoch_mean",
    "evaluate_reads_per_epoch": "evaluate_reads_per_epoch_mean",
    "top1_precision": "top1_precision_mean",
    "unique_ids_trained_per_epoch": "unique_ids_trained_per_epoch_mean",
    "epoch_order_spearman": "epoch_order_spearman_mean",
    "never_trained_at_end": "never_trained_at_end_mean",
}
#: the run figures that may be None (no selective epoch, too few epochs): left out of a mean
_MAYBE_NONE = frozenset({"top1_precision", "epoch_order_spearman"})


def _table_row(workload: str, system: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One (workload, system) over its seeds: accuracy and time to target as mean ± std,
    the other figures as means."""
    base = [r for r in runs if r["workload"] == workload and r["system"] == BASELINE]
    base_acc = statistics.fmean(r["final_val_accuracy"] for r in base)
    mine = [r for r in runs if r["workload"] == workload and r["system"] == system]
    acc_mean, acc_std = _mean_std([r["final_val_accuracy"] for r in mine])
    reached = [r["time_to_target_s"] for r in mine if r["time_to_target_s"] is not None]
    ttt_mean, ttt_std = _mean_std(reached)
    row: dict[str, Any] = {
        "workload": workload,
        "system": system,
        "final_acc_mean": acc_mean,
        "final_acc_std": acc_std,
        "acc_delta_vs_pytorch": None if acc_mean is None else round(acc_mean - base_acc, 4),
        "time_to_target_mean_s": ttt_mean,
        "time_to_target_std_s": ttt_std,
        "reached": f"{len(reached)}/{len(mine)}",
        "modeled_seconds_total_mean": _mean_std([r["modeled_seconds"] for r in mine])[0],
    }
    for key, out in _MEANS.items():
        values = [r[key] for r in mine]
        if key in _MAYBE_NONE:
            values = [v for v in values if v is not None]
        row[out] = _mean_std([float(v) for v in values])[0]
    return row


def _params(opts: TrainOptions, store: StoreModel, started: float) -> dict[str, Any]:
    """The result's ``params``: what was run, on which device, and how long it took."""
    return {
        "workloads": list(opts.workloads),
        "systems": list(opts.systems),
        "seeds": list(opts.seeds),
        "epochs": opts.epochs,
        "cache_frac": opts.cache_frac,
        "compute_ms_per_batch": opts.compute_ms,
        "store": store.as_dict(),
        "chunk_size": opts.chunk_size,
        "model": opts.model,
        "device": opts.device,
        "batch_size": opts.batch_size,
        "lr": opts.lr,
        "measure_compute": opts.measure_compute,
        "test_n": opts.test_n,
        "device_name": device_name(opts.device),
        "wall_seconds_total": round(time.perf_counter() - started, 1),
    }


#: the result's notes after the first (which says what its time is made of)
NOTES = (
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
)
