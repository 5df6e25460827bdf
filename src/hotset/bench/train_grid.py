"""``hotset bench traingrid``: systems against a reference over a cache x chunk-size grid.

Why (issue #43): "Scout at least as fast as Quiver wherever both apply" is a claim
about every cell of a grid -- caches of 5-40% of the data set, chunks of 16 to 256
samples, one store -- on two measures, the time of an epoch and the time to the
``pytorch`` baseline's final accuracy, at bytes read within 1.2 of the bytes
trained. ``hotset bench train`` runs one cell; this runs the grid, training the
baseline once per seed (it reads single samples: no cache, no chunk), and reports
per cell each system's figures beside the reference system's (the first of
``--systems``).

Every run is the live simulator's (:func:`hotset.sim.live.run_live`): real
decisions, real reads, a real small model; time is modeled (the store's virtual
clock plus ``compute_ms`` per step), so it is labelled simulated.

The target is ``target_share`` (0.99) of the baseline's final accuracy at the seed, as
issue #43's audit measured it ("time to 0.99x pytorch's accuracy"): the final accuracy
itself is one noisy epoch's figure, which a run that trains as well may never touch
again (in a first grid, 5 of 24 system-cells missed it on one seed, as often for Quiver
as for Scout). The time to the full final accuracy is reported beside it, and each
run keeps its accuracy curve (modeled seconds, accuracy per epoch) for any other one.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np

from hotset import options as typed
from hotset.bench.train import BASELINE, DATA_DIR, check_seeds, time_to_target
from hotset.bench.workloads import DEFAULT_DATA_DIR, workload_dir
from hotset.errors import HotsetError
from hotset.options import cli
from hotset.storage.presets import StoreModel

#: the issue's grid
CACHE_FRACS = (0.05, 0.1, 0.2, 0.4)
CHUNK_SIZES = (16, 64, 256)
#: per-epoch time may be this much over the reference's and still pass
EPOCH_SLACK = 1.05
#: bytes read may be this much over the bytes trained
BYTES_LIMIT = 1.2
#: the share of the baseline's final accuracy a run must reach (the audit's 0.99x)
TARGET_SHARE = 0.99


def _mean(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return round(statistics.fmean(got), 4) if got else None


def _one(
    system: str,
    *,
    dataset: Path,
    seed: int,
    cache_frac: float,
    epochs: int,
    compute_ms: float,
    store: StoreModel,
    target: float | None,
    target_share: float = TARGET_SHARE,
) -> dict[str, Any]:
    """One run's figures; ``target``: the baseline's final accuracy at this seed (None:
    this run's own, for the baseline itself)."""
    from hotset.data import Manifest
    from hotset.data.stratify import stratified_split
    from hotset.sim.live import LiveOptions, run_live
    from hotset.systems.registry import parse_system

    name, options = parse_system(system)
    result = run_live(
        LiveOptions(
            system=name,
            options=options or None,
            dataset=str(dataset),
            cache_frac=cache_frac,
            epochs=epochs,
            seed=seed,
            compute_ms_per_batch=compute_ms,
            record_accesses=True,
            **store.link(),
        )
    )
    manifest = Manifest.load(dataset)
    train_rows, _ = stratified_split(np.asarray(manifest.labels), val_frac=0.1, seed=seed)
    sizes = np.asarray(manifest.sizes, dtype=np.int64)[train_rows]
    rows = result["epochs"]
    setup = float((result.get("setup") or {}).get("modeled_seconds", 0.0))
    trained = sum(int(sizes[np.asarray(ids, dtype=np.int64)].sum()) for ids in result["served"])
    read = sum(r["storage_bytes"] for r in rows)
    final = result["totals"]["final_val_accuracy"]
    full = final if target is None else target
    elapsed, curve = setup, []
    for r in rows:
        elapsed += r["modeled_epoch_seconds"]
        curve.append([round(elapsed, 4), r["val_accuracy"]])
    return {
        "system": system,
        "seed": seed,
        "final_val_accuracy": final,
        "target": full * target_share,
        "time_to_target_s": time_to_target(rows, full * target_share, start=setup),
        "time_to_full_target_s": time_to_target(rows, full, start=setup),
        "curve": curve,
        "epoch_seconds": statistics.fmean(r["modeled_epoch_seconds"] for r in rows),
        "modeled_seconds": setup + sum(r["modeled_epoch_seconds"] for r in rows),
        "requests_per_epoch": statistics.fmean(r["storage_requests"] for r in rows),
        "bytes_read_over_trained": read / trained if trained else None,
        "unique_ids_trained_per_epoch": statistics.fmean(r["unique_ids_trained"] for r in rows),
        "exact_hits_per_epoch": statistics.fmean(r["exact_hits"] for r in rows),
        "substitutions_per_epoch": statistics.fmean(r["substitutions"] for r in rows),
        "fetched_ahead_per_epoch": statistics.fmean(r["fetched_ahead"] for r in rows),
        "never_trained_at_end": rows[-1]["never_trained"],
        "policy": result["policy"],
    }


def _all_reached(mine: list[dict[str, Any]], key: str) -> tuple[float | None, str]:
    """The mean over the seeds (None unless every seed reached it), and 'k/n'."""
    reached = [r[key] for r in mine if r[key] is not None]
    return (_mean(reached) if len(reached) == len(mine) else None), f"{len(reached)}/{len(mine)}"


def _cell(runs: list[dict[str, Any]], system: str) -> dict[str, Any]:
    mine = [r for r in runs if r["system"] == system]
    ttt, reached = _all_reached(mine, "time_to_target_s")
    full, reached_full = _all_reached(mine, "time_to_full_target_s")
    return {
        "system": system,
        "epoch_s": _mean([r["epoch_seconds"] for r in mine]),
        "time_to_target_s": ttt,
        "reached": reached,
        "time_to_full_target_s": full,
        "reached_full": reached_full,
        "final_acc": _mean([r["final_val_accuracy"] for r in mine]),
        "requests_per_epoch": _mean([r["requests_per_epoch"] for r in mine]),
        "bytes_read_over_trained": _mean([r["bytes_read_over_trained"] for r in mine]),
        "unique_ids_trained_per_epoch": _mean([r["unique_ids_trained_per_epoch"] for r in mine]),
        "exact_hits_per_epoch": _mean([r["exact_hits_per_epoch"] for r in mine]),
        "substitutions_per_epoch": _mean([r["substitutions_per_epoch"] for r in mine]),
        "fetched_ahead_per_epoch": _mean([r["fetched_ahead_per_epoch"] for r in mine]),
    }


def _verdict(row: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    """The row against the reference system's row of its cell (the issue's three tests)."""
    epoch = None if not ref["epoch_s"] else row["epoch_s"] / ref["epoch_s"]
    mine, theirs = row["time_to_target_s"], ref["time_to_target_s"]
    ttt = None if mine is None or not theirs else mine / theirs
    ok_ttt = mine is not None and (theirs is None or mine <= theirs)
    ok_bytes = (row["bytes_read_over_trained"] or 0.0) <= BYTES_LIMIT
    return {
        "epoch_vs_ref": None if epoch is None else round(epoch, 3),
        "ttt_vs_ref": None if ttt is None else round(ttt, 3),
        "meets": bool(epoch is not None and epoch <= EPOCH_SLACK and ok_ttt and ok_bytes),
    }


@dataclass(frozen=True)
class TrainGridOptions:
    """What ``bench traingrid`` trains; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a grid built in Python is checked alike.

    Its own fields rather than :class:`~hotset.bench.train.TrainOptions`': the grid
    sweeps cache sizes and chunk sizes where ``bench train`` takes one of each, and
    compares systems against the first of them, with ``pytorch`` trained apart.
    """

    systems: tuple[str, ...] = field(
        default=("quiver", "scout"),
        metadata=cli(
            "Comma list (NAME[option=value,...] too); the first is the reference of each cell.",
            parse=typed.systems,
        ),
    )
    cache_fracs: tuple[float, ...] = field(default=CACHE_FRACS, metadata=cli(parse=typed.floats))
    chunk_sizes: tuple[int, ...] = field(default=CHUNK_SIZES, metadata=cli(parse=typed.ints))
    seeds: tuple[int, ...] = field(default=(0, 1, 2), metadata=cli(parse=typed.ints))
    epochs: int = field(default=15, metadata=cli(type=click.IntRange(min=1)))
    compute_ms: float = field(default=20.0, metadata=cli(type=click.FloatRange(min=0)))
    target_share: float = field(
        default=TARGET_SHARE,
        metadata=cli(
            "The share of pytorch's final accuracy a run must reach (the audit's 0.99).",
            type=click.FloatRange(min=0, max=1, min_open=True),
        ),
    )
    workload: str = field(
        default="synth", metadata=cli(type=click.Choice(["synth", "synth-noisy", "digits"]))
    )
    synth_n: int = field(default=5_000, metadata=cli(type=click.IntRange(min=200)))
    data_dir: Path = field(default=DEFAULT_DATA_DIR, metadata=DATA_DIR)

    def __post_init__(self) -> None:
        """A cache share, chunk size, seed or system the grid cannot run fails before any
        training, naming its option."""
        from hotset.systems.registry import parse_system

        if any(not 0 < f <= 1 for f in self.cache_fracs):
            raise HotsetError(
                f"--cache-fracs: each must be in (0, 1], got {typed.shown(self.cache_fracs)!r}"
            )
        if any(c < 1 for c in self.chunk_sizes):
            raise HotsetError(
                f"--chunk-sizes: each must be >= 1, got {typed.shown(self.chunk_sizes)!r}"
            )
        check_seeds(self.seeds)
        if BASELINE in self.systems:
            raise HotsetError(
                f"--systems: {BASELINE} is the baseline, trained once per seed; leave it out"
            )
        for system in self.systems:
            parse_system(system)


def run(
    opts: TrainGridOptions = TrainGridOptions(),
    *,
    store: StoreModel,
    progress: bool = True,
) -> dict[str, Any]:
    """The grid (module docstring, :class:`TrainGridOptions`); the first of the systems
    is the reference; ``store`` is the modeled store every run reads from."""
    from tqdm import tqdm

    systems, seeds = opts.systems, opts.seeds
    base = workload_dir(
        opts.workload, data_dir=opts.data_dir, synth_n=opts.synth_n, progress=progress
    )
    cells = [(seed, chunk, frac, s) for chunk in opts.chunk_sizes for frac in opts.cache_fracs
             for s in systems for seed in seeds]  # fmt: skip
    bar = tqdm(total=len(seeds) + len(cells), desc="traingrid", unit="run", file=sys.stderr,
               disable=not progress)  # fmt: skip
    common: dict[str, Any] = {
        "epochs": opts.epochs,
        "compute_ms": opts.compute_ms,
        "store": store,
        "target_share": opts.target_share,
    }
    baseline: dict[int, dict[str, Any]] = {}
    for seed in seeds:
        bar.set_postfix_str(f"seed {seed} {BASELINE}")
        baseline[seed] = _one(BASELINE, dataset=base, seed=seed, cache_frac=0.2, target=None,
                              **common)  # fmt: skip
        bar.update()
    runs: list[dict[str, Any]] = []
    for seed, chunk, frac, system in cells:
        bar.set_postfix_str(f"chunk {chunk} cache {frac:g} seed {seed} {system}")
        dataset = workload_dir(opts.workload, data_dir=opts.data_dir, synth_n=opts.synth_n,
                               packed=True, chunk_size=chunk, progress=progress)  # fmt: skip
        target = baseline[seed]["final_val_accuracy"]
        one = _one(system, dataset=dataset, seed=seed, cache_frac=frac, target=target, **common)
        runs.append({"cache_frac": frac, "chunk_size": chunk, **one})
        bar.update()
    bar.close()
    return _tables(runs, baseline, _params(opts, store), store)


def _params(opts: TrainGridOptions, store: StoreModel) -> dict[str, Any]:
    """The result's ``params``: the grid as run, its reference named."""
    return {"workload": opts.workload, "synth_n": opts.synth_n, "systems": list(opts.systems),
            "reference": opts.systems[0], "cache_fracs": list(opts.cache_fracs),
            "chunk_sizes": list(opts.chunk_sizes), "seeds": list(opts.seeds),
            "epochs": opts.epochs, "compute_ms_per_batch": opts.compute_ms,
            "store": store.as_dict(), "target_share": opts.target_share}  # fmt: skip


def _tables(
    runs: list[dict[str, Any]],
    baseline: dict[int, dict[str, Any]],
    params: dict[str, Any],
    store: StoreModel,
) -> dict[str, Any]:
    systems, share = params["systems"], params["target_share"]
    compute_ms = params["compute_ms_per_batch"]
    chunk_sizes, cache_fracs = params["chunk_sizes"], params["cache_fracs"]
    table: list[dict[str, Any]] = []
    for chunk in chunk_sizes:
        for frac in cache_fracs:
            here = [r for r in runs if r["chunk_size"] == chunk and r["cache_frac"] == frac]
            rows = [_cell(here, s) for s in systems]
            for row in rows:
                table.append(
                    {"cache_frac": frac, "chunk_size": chunk, **row, **_verdict(row, rows[0])}
                )
    others = [r for r in table if r["system"] != systems[0]]
    base_rows = list(baseline.values())
    return {
        "params": params,
        "table": table,
        "baseline": {
            "system": BASELINE,
            "final_acc": _mean([r["final_val_accuracy"] for r in base_rows]),
            "epoch_s": _mean([r["epoch_seconds"] for r in base_rows]),
            "time_to_target_s": _mean([r["time_to_target_s"] for r in base_rows]),
        },
        "cells_met": f"{sum(r['meets'] for r in others)}/{len(others)}",
        "runs": runs,
        "notes": [
            f"Simulated time: the live-training simulator's virtual-clock store "
            f"({store.describe()}) plus {compute_ms:g} ms of modeled compute per step; accuracy "
            "is real (a small model trained on the CPU).",
            f"Target = {share:g} of the {BASELINE} baseline's final validation accuracy at the "
            "same seed (issue #43's audit measured time to 0.99x; the baseline is trained "
            "once per seed: it reads single samples, so no cache or chunk changes it); "
            "time_to_target_s is the mean over the seeds, None unless every seed reached it; "
            "time_to_full_target_s and reached_full: the same for the whole final accuracy.",
            f"epoch_vs_ref, ttt_vs_ref: the row's per-epoch time and time to target over "
            f"{systems[0]}'s in the same cell; meets: per-epoch time at most {EPOCH_SLACK} x the "
            f"reference's, time to target at most the reference's, and bytes read at most "
            f"{BYTES_LIMIT} x the bytes trained (issue #43's three tests).",
            "unique_ids_trained_per_epoch is the coverage beside every hit count; exact hits, "
            "substitutions and fetched-ahead samples are counted apart (docs/report.md).",
        ],
    }
