"""``hotset bench matrix``: every system where users run it, in one table.

Two halves, each honest about what it is:

* **Measured (real clock).** For each store preset and workload, one *group*
  runs a ``torch.utils.data.DataLoader`` tuned to keep as many requests in flight
  as the store allows (:mod:`hotset.bench.torch_baseline`), the no-I/O ceiling and every
  system at every cache size back to back through the real loader (DataLoader
  worker processes, the embedded shared-memory cache) over one job-wide modeled
  server (:class:`~hotset.storage.shared_throttle.SharedThrottledStore`: the
  preset's latency, link bandwidth and requests in flight). The accelerator's
  step is a fixed wait per batch, so this 2-core CPU does not hide the I/O.
  Ratios to torch and to no-I/O are taken inside a group (rows measured minutes
  apart on a loaded machine would not compare), and groups repeat, the order of
  the systems rotated each time, so the spread says how much load moved them.
* **Simulated accuracy.** The live simulator trains a real small model on the
  same workload for every (system, cache size, seed) and gives the accuracy, the
  distinct ids trained per epoch and the epochs it took to reach the ``pytorch``
  baseline's final accuracy. The *modeled* time to accuracy of a cell is those
  epochs times that cell's measured seconds per epoch.

The losses fed back in the measured half are a stand-in (:class:`StandInLosses`):
per-sample difficulties that persist across epochs, as real losses do, so the
importance systems cache and repeat what they would on a real job.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np

from hotset import options as typed
from hotset.bench.workloads import DEFAULT_DATA_DIR
from hotset.errors import HotsetError
from hotset.options import cli

DEFAULT_PRESETS = ("nfs-10gbe", "cloud-nas", "s3-small")
DEFAULT_WORKLOADS = ("synth", "imagenet-like")
DEFAULT_FRACS = (0.1, 0.2, 0.4)
#: the baselines, then the five seed systems and scout (hotset's own)
DEFAULT_SYSTEMS = (
    "pytorch", "lru", "minio", "shade", "icache", "impact", "quiver", "brand", "scout",
)  # fmt: skip
#: storage reads in flight per loader process, hotset's and the tuned torch row's alike
IO_THREADS = 8
#: the rows every group has besides the systems
REFERENCES = ("torch", "no-io")
#: what a run can do: measure on the real clock, simulate accuracy, or both
HALVES = ("measured", "simulated")


class StandInLosses:
    """Per-sample losses for a run whose training is a fixed wait.

    Each sample has a seeded log-normal difficulty that persists across epochs
    (hard samples stay hard, as in real training), shrinking by 10% an epoch,
    with 10% noise per draw: what importance sampling ranks on, at no compute.
    """

    def __init__(self, n: int, *, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.difficulty = rng.lognormal(mean=0.0, sigma=1.0, size=n)
        self._noise = np.random.default_rng(seed + 1)

    def __call__(self, ids: Any, epoch: int) -> Any:
        ids = np.asarray(ids, dtype=np.int64)
        noise = 1.0 + 0.1 * self._noise.standard_normal(len(ids))
        return np.maximum(self.difficulty[ids] * 0.9**epoch * noise, 1e-3)


def _datasets(
    workloads: Sequence[str], *, data_dir: Path, n: int, progress: bool
) -> dict[str, Path]:
    """Each workload at ``n`` samples (imagenet-like too), packed for the chunk systems."""
    from hotset.bench.workloads import workload_dir

    return {
        w: workload_dir(
            w, data_dir=data_dir, synth_n=n, imagenet_n=n, packed=True, progress=progress
        )
        for w in workloads
    }


def measure_group(
    dataset: Path,
    *,
    store: Any,
    systems: Sequence[str],
    fracs: Sequence[float],
    epochs: int,
    workers: int,
    batch_size: int,
    step_ms: float,
    seed: int,
    rotate: int = 0,
    tick: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """torch, no-I/O, then every (cache size, system), back to back: one group.

    ``rotate`` shifts the order of the systems so repeats do not always run a
    system at the same point of the group. Each row carries its ratios to this
    group's torch and no-I/O rows.
    """
    from hotset.bench.loader import MemoryStore, hotset_row, plain_row, torch_rows
    from hotset.torch import open_dataset

    data = open_dataset(str(dataset), retries=0)
    inner = data.store

    def throttled() -> Any:  # a fresh server per row: one row's queue never delays the next
        return store.throttle(inner)

    common: dict[str, Any] = {
        "workers": workers, "batch_size": batch_size, "epochs": epochs, "seed": seed,
    }  # fmt: skip
    compute_s = step_ms / 1000.0
    tick("torch")
    rows = torch_rows(
        throttled, data.manifest, store_in_flight=store.max_concurrency, io_threads=IO_THREADS,
        with_untuned=False, compute_s=compute_s, **common,
    )  # fmt: skip
    k = rotate % max(1, len(systems))
    order = [*systems[k:], *systems[:k]]
    losses = StandInLosses(len(data.manifest), seed=seed)
    for frac in fracs:
        for system in order:
            tick(f"{system} {frac:.0%}")
            row = hotset_row(
                system,
                data.with_store(throttled()),
                cache_frac=frac,
                compute_s=compute_s,
                io_threads=IO_THREADS,
                losses=losses,
                **common,
            )
            rows.append(
                row | {"cache_frac": frac, "requests_in_flight": max(1, workers) * IO_THREADS}
            )
    tick("no-io")
    memory = MemoryStore({key: inner.read(key) for key in data.manifest.keys})
    ceiling = plain_row("no-io", memory, data.manifest, compute_s=compute_s, **common)
    rows.append(ceiling | {"storage_requests": 0, "storage_bytes": 0})
    torch_rate, top = rows[0]["samples_per_s"], ceiling["samples_per_s"]
    for row in rows:
        row["vs_torch"] = row["samples_per_s"] / torch_rate if torch_rate else None
        row["vs_no_io"] = row["samples_per_s"] / top if top else None
        row["epochs"] = epochs
        row["seconds_per_epoch"] = row["wall_seconds"] / epochs
    return rows


def accuracy_runs(
    dataset: Path,
    *,
    systems: Sequence[str],
    fracs: Sequence[float],
    seeds: Sequence[int],
    epochs: int,
    store: Any,
    step_ms: float,
    val_frac: float = 0.2,
    tick: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """The live simulator (real training, modeled store) for every (frac, seed, system).

    ``val_frac`` of the samples (stratified) validate: 0.2 of 2,000 gives 400, so
    one sample moves the accuracy by 0.25 pt."""
    from hotset.sim.live import LiveOptions, run_live
    from hotset.systems.registry import parse_system

    out: list[dict[str, Any]] = []
    for frac in fracs:
        for seed in seeds:
            target = None
            for system in ["pytorch", *[s for s in systems if s != "pytorch"]]:
                tick(f"{system} {frac:.0%} seed {seed}")
                name, options = parse_system(system)
                result = run_live(
                    LiveOptions(
                        system=name,
                        options=options or None,
                        dataset=str(dataset),
                        cache_frac=frac,
                        epochs=epochs,
                        seed=seed,
                        val_frac=val_frac,
                        compute_ms_per_batch=step_ms,
                        **store.link(),
                    )
                )
                rows = result["epochs"]
                final = result["totals"]["final_val_accuracy"]
                target = final if target is None else target
                out.append(
                    {
                        "cache_frac": frac,
                        "seed": seed,
                        "system": system,
                        "final_val_accuracy": final,
                        "target": target,
                        "epochs_to_target": _epochs_to(rows, target),
                        "distinct_ids_per_epoch": statistics.fmean(
                            r["unique_ids_trained"] for r in rows
                        ),
                        "n_train": result["n_train"],
                        "n_val": result["n_val"],
                    }
                )
    return out


def _epochs_to(rows: list[dict[str, Any]], target: float) -> int | None:
    """The first epoch (1-based) whose validation accuracy reaches ``target``."""
    for i, row in enumerate(rows, start=1):
        if row["val_accuracy"] is not None and row["val_accuracy"] >= target - 1e-12:
            return i
    return None


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def summarize(
    measured: list[dict[str, Any]], accuracy: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One table row per (preset, workload, cache size, system): medians and spreads
    over the repeats, beside the simulated accuracy of the same cell."""
    keys = list(
        dict.fromkeys(
            (r["preset"], r["workload"], r.get("cache_frac"), r["name"]) for r in measured
        )
    )
    fracs = sorted({r["cache_frac"] for r in measured if r.get("cache_frac") is not None})
    table: list[dict[str, Any]] = []
    for preset, workload, frac, name in keys:
        for f in [frac] if frac is not None else fracs:
            mine = [
                r
                for r in measured
                if (r["preset"], r["workload"], r.get("cache_frac"), r["name"])
                == (preset, workload, frac, name)
            ]
            table.append(_cell(preset, workload, f, name, mine, accuracy))
    return table


def _cell(
    preset: str,
    workload: str,
    frac: float,
    name: str,
    mine: list[dict[str, Any]],
    accuracy: list[dict[str, Any]],
) -> dict[str, Any]:
    vs_torch = _spread([r["vs_torch"] for r in mine])
    vs_no_io = _spread([r["vs_no_io"] for r in mine])
    epochs = mine[0]["epochs"]
    reads = statistics.fmean(r["storage_bytes"] for r in mine) / epochs
    delivered = statistics.fmean(r["delivered_bytes"] for r in mine) / epochs
    sim_name = "pytorch" if name in REFERENCES else name
    acc = [
        a
        for a in accuracy
        if a["workload"] == workload and a["cache_frac"] == frac and a["system"] == sim_name
    ]
    base = [
        a
        for a in accuracy
        if a["workload"] == workload and a["cache_frac"] == frac and a["system"] == "pytorch"
    ]
    row: dict[str, Any] = {
        "preset": preset,
        "workload": workload,
        "cache_frac": frac,
        "system": name,
        "vs_torch": vs_torch["median"],
        "vs_torch_min": vs_torch["min"],
        "vs_torch_max": vs_torch["max"],
        "vs_no_io": vs_no_io["median"],
        "vs_no_io_min": vs_no_io["min"],
        "vs_no_io_max": vs_no_io["max"],
        "samples_per_s": round(statistics.median(r["samples_per_s"] for r in mine), 1),
        "stall_share": round(statistics.fmean(r["stall_share"] for r in mine), 3),
        "requests_per_epoch": round(statistics.fmean(r["storage_requests"] for r in mine) / epochs),
        "mb_read_per_epoch": round(reads / 1e6, 2),
        "read_per_delivered": round(reads / delivered, 3) if delivered else None,
        "exact_hit_ratio": _mean_or_none([r.get("exact_hit_ratio") for r in mine]),
        "substitution_ratio": _mean_or_none([r.get("substitution_ratio") for r in mine]),
        "fetched_ahead_ratio": _mean_or_none([r.get("fetched_ahead_ratio") for r in mine]),
        "distinct_ids_per_epoch": round(
            statistics.fmean(r["unique_ids_trained_per_epoch"] for r in mine), 1
        ),
        "requests_in_flight": mine[0].get("requests_in_flight"),
        "repeats": len(mine),
    }
    return row | _accuracy_fields(acc, base, row["samples_per_s"])


def _accuracy_fields(
    acc: list[dict[str, Any]], base: list[dict[str, Any]], samples_per_s: float
) -> dict[str, Any]:
    if not acc:
        return {}
    finals = [a["final_val_accuracy"] for a in acc]
    base_mean = statistics.fmean(a["final_val_accuracy"] for a in base) if base else None
    reached = [a["epochs_to_target"] for a in acc if a["epochs_to_target"] is not None]
    epochs_to = statistics.fmean(reached) if reached else None
    return {
        "sim_acc": round(statistics.fmean(finals), 4),
        "sim_acc_noise_pt": round(
            acc_noise_pt(statistics.fmean(finals), acc[0]["n_val"], len(acc)), 2
        ),
        "sim_acc_delta_pt": None
        if base_mean is None
        else round(100 * (statistics.fmean(finals) - base_mean), 2),
        "sim_acc_std_pt": round(100 * statistics.pstdev(finals), 2),
        "sim_distinct_share": round(
            statistics.fmean(a["distinct_ids_per_epoch"] / a["n_train"] for a in acc), 3
        ),
        "epochs_to_target": None if epochs_to is None else round(epochs_to, 2),
        "reached": f"{len(reached)}/{len(acc)}",
        # the simulated epochs to the target, each of n_train samples at the measured rate
        "modeled_tta_s": None
        if epochs_to is None or not samples_per_s
        else round(epochs_to * acc[0]["n_train"] / samples_per_s, 2),
    }


def acc_noise_pt(accuracy: float, n_val: int, seeds: int) -> float:
    """Two standard errors, in points, of the difference of two mean accuracies over
    ``seeds`` runs each on ``n_val`` validation samples: a difference smaller than
    this is within the noise of measuring it."""
    p = min(max(accuracy, 0.0), 1.0)
    return 200.0 * math.sqrt(2.0 * p * (1.0 - p) / (n_val * max(1, seeds)))


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return round(statistics.fmean(got), 4) if got else None


def _validate(opts: MatrixOptions) -> None:
    """The lists non-empty, the cache sizes shares, the counts at least their minimum."""
    if not opts.presets or not opts.systems or not opts.cache_fracs or not opts.seeds:
        raise HotsetError("bench matrix: presets, systems, cache sizes and seeds must be non-empty")
    bad = [f for f in opts.cache_fracs if not 0 < f <= 1]
    if bad:
        raise HotsetError(f"bench matrix: cache sizes must be in (0, 1], got {bad[0]!r}")
    repeats, epochs, sim_epochs = opts.repeats, opts.epochs, opts.sim_epochs
    if repeats < 1 or epochs < 2 or sim_epochs < 1:
        raise HotsetError(
            f"bench matrix: repeats >= 1, epochs >= 2 (one cold, one warm) and sim epochs >= 1; "
            f"got repeats={repeats}, epochs={epochs}, sim_epochs={sim_epochs}"
        )


def _from_result(help: str) -> dict[str, Any]:
    """``--measured-from`` / ``--accuracy-from``: an earlier result file, which must exist."""
    return cli(help, type=click.Path(dir_okay=False, exists=True, path_type=Path))


@dataclass(frozen=True)
class MatrixOptions:
    """What ``bench matrix`` runs; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike.

    ``halves`` runs only some of them; ``measured_from`` / ``accuracy_from`` take a
    half from an earlier result file instead (its rows must cover this run's cells),
    so the two halves can run as separate processes and be joined afterwards.
    """

    presets: tuple[str, ...] = field(
        default=DEFAULT_PRESETS,
        metadata=cli(
            "Comma list of store presets (see `hotset stores`).", parse=typed.texts, flag="--stores"
        ),
    )
    workloads: tuple[str, ...] = field(default=DEFAULT_WORKLOADS, metadata=cli(parse=typed.texts))
    cache_fracs: tuple[float, ...] = field(default=DEFAULT_FRACS, metadata=cli(parse=typed.floats))
    systems: tuple[str, ...] = field(
        default=DEFAULT_SYSTEMS,
        metadata=cli(
            "Comma list; NAME[option=value,...] sets a system's options.", parse=typed.systems
        ),
    )
    repeats: int = field(default=3, metadata=cli(type=click.IntRange(min=1)))
    epochs: int = field(
        default=3,
        metadata=cli("Measured epochs per row (the first is cold).", type=click.IntRange(min=2)),
    )
    n: int = field(
        default=1200,
        metadata=cli(
            "Samples of each workload in the measured half.", type=click.IntRange(min=200)
        ),
    )
    sim_n: int = field(
        default=2000,
        metadata=cli(
            "Samples of each workload the simulator trains on.", type=click.IntRange(min=200)
        ),
    )
    workers: int = field(default=4, metadata=cli(type=click.IntRange(min=0)))
    batch_size: int = field(default=32, metadata=cli(type=click.IntRange(min=1)))
    step_ms: float = field(
        default=10.0,
        metadata=cli(
            "The accelerator's step per batch, modeled as a fixed wait.",
            type=click.FloatRange(min=0),
        ),
    )
    seeds: tuple[int, ...] = field(
        default=(0, 1, 2), metadata=cli("Simulated training seeds.", parse=typed.ints)
    )
    sim_epochs: int = field(default=10, metadata=cli(type=click.IntRange(min=1)))
    data_dir: Path = field(
        default=DEFAULT_DATA_DIR,
        metadata=cli(type=click.Path(file_okay=False, path_type=Path)),
    )
    halves: tuple[str, ...] = field(
        default=HALVES,
        metadata=cli(
            "Run only the measured (real clock) or the simulated (accuracy) half.",
            parse=typed.texts,
        ),
    )
    measured_from: Path | None = field(
        default=None, metadata=_from_result("Take the measured half from an earlier matrix result.")
    )
    accuracy_from: Path | None = field(
        default=None,
        metadata=_from_result("Take the simulated half from an earlier matrix result."),
    )

    def __post_init__(self) -> None:
        """Empty lists, a bad cache size, count, half, preset or system fail before any
        work, naming themselves."""
        from hotset.storage.presets import resolve_store
        from hotset.systems.registry import parse_system

        _validate(self)
        bad = [h for h in self.halves if h not in HALVES]
        if bad or not self.halves:
            raise HotsetError(
                f"bench matrix: halves are {', '.join(HALVES)}; got {list(self.halves)!r}"
            )
        for preset in self.presets:
            resolve_store(preset, latency_ms=None, bandwidth_mb_s=None, max_concurrency=None)
        for system in self.systems:
            parse_system(system)


def run(opts: MatrixOptions = MatrixOptions(), *, progress: bool = True) -> dict[str, Any]:
    """The whole matrix (:class:`MatrixOptions`); see the module docstring for its two
    halves."""
    from hotset.storage.presets import resolve_store

    presets, workloads, fracs = opts.presets, opts.workloads, opts.cache_fracs
    stores = {
        p: resolve_store(p, latency_ms=None, bandwidth_mb_s=None, max_concurrency=None)
        for p in presets
    }
    reused_measured = _reused(opts.measured_from, "measured", opts)
    reused_accuracy = _reused(opts.accuracy_from, "accuracy", opts)
    paths = _datasets(workloads, data_dir=opts.data_dir, n=opts.n, progress=progress)
    sim_paths = _datasets(workloads, data_dir=opts.data_dir, n=opts.sim_n, progress=progress)
    measure = "measured" in opts.halves and reused_measured is None
    simulate = "simulated" in opts.halves and reused_accuracy is None
    bar = _bar(_rows_to_run(opts, measure, simulate), progress)
    measured = reused_measured or []
    load_before = _load_average()
    if measure:
        measured = _measure_all(stores, paths, opts, bar)
    accuracy = reused_accuracy or []
    if simulate:
        for workload, path in sim_paths.items():
            runs = accuracy_runs(
                path, systems=opts.systems, fracs=fracs, seeds=opts.seeds, epochs=opts.sim_epochs,
                store=stores[presets[0]], step_ms=opts.step_ms, tick=bar(f"simulated {workload}"),
            )  # fmt: skip
            accuracy += [r | {"workload": workload} for r in runs]
    result = _result(measured, accuracy, opts, stores=stores, paths=paths, sim_paths=sim_paths)
    # how busy the machine was: the ratios are taken within a group, but a machine whose
    # cores are all taken slows the CPU-bound rows (no-I/O, cache hits) more than torch's
    if measure:
        result["params"]["load_average_1min"] = {"start": load_before, "end": _load_average()}
    elif opts.measured_from is not None:  # the load the measured half ran under, from its file
        part = json.loads(Path(opts.measured_from).read_text())["result"]["params"]
        result["params"]["load_average_1min"] = part.get("load_average_1min")
    return result


def _rows_to_run(opts: MatrixOptions, measure: bool, simulate: bool) -> int:
    """The progress bar's total: every measured row and every simulated run to come."""
    fracs, systems, workloads = opts.cache_fracs, opts.systems, opts.workloads
    groups = len(opts.presets) * len(workloads) * opts.repeats
    simulated = len(workloads) * len(fracs) * len(opts.seeds) * len(set(systems) | {"pytorch"})
    return measure * groups * (2 + len(fracs) * len(systems)) + simulate * simulated


def _load_average() -> float | None:
    import os

    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover - not on every platform
        return None


def _measure_all(
    stores: dict[str, Any],
    paths: dict[str, Path],
    opts: MatrixOptions,
    bar: Callable[[str], Callable[[str], None]],
) -> list[dict[str, Any]]:
    """Every group, repeat after repeat: a repeat covers every preset and workload before
    the next starts, so a slow spell of the machine lands in one repeat, not one preset."""
    measured: list[dict[str, Any]] = []
    for rep in range(opts.repeats):
        for preset, store in stores.items():
            for workload, path in paths.items():
                rows = measure_group(
                    path, store=store, systems=opts.systems, fracs=opts.cache_fracs,
                    epochs=opts.epochs, workers=opts.workers, batch_size=opts.batch_size,
                    step_ms=opts.step_ms, seed=0, rotate=rep,
                    tick=bar(f"{preset} {workload} #{rep + 1}"),
                )  # fmt: skip
                measured += [
                    r | {"preset": preset, "workload": workload, "repeat": rep} for r in rows
                ]
    return measured


def _reused(path: Path | None, key: str, opts: MatrixOptions) -> list[dict[str, Any]] | None:
    """The ``key`` rows of an earlier matrix result, checked to cover this run's cells."""
    if path is None:
        return None
    import json

    try:
        rows: list[dict[str, Any]] = json.loads(Path(path).read_text())["result"][key]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HotsetError(f"{path}: not a bench matrix result with {key} rows ({exc})") from None
    have = {(r.get("preset"), r["workload"], r.get("cache_frac"), r.get("name", r.get("system")))
            for r in rows}  # fmt: skip
    for workload in opts.workloads:
        for frac in opts.cache_fracs:
            for system in opts.systems:
                for preset in opts.presets if key == "measured" else [None]:
                    if (preset, workload, frac, system) not in have:
                        raise HotsetError(
                            f"{path}: its {key} rows lack {system} at {frac:g} on {workload}"
                            + (f" / {preset}" if preset else "")
                        )
    return rows


def _bar(total: int, progress: bool) -> Callable[[str], Callable[[str], None]]:
    """A tqdm bar over every row; ``bar(group)`` gives the tick one group calls per row."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc="matrix", unit="row", file=sys.stderr, disable=not progress)

    def group(label: str) -> Callable[[str], None]:
        def tick(row: str) -> None:
            bar.update(1)
            bar.set_postfix_str(f"{label}: {row}")

        return tick

    return group


def _result(
    measured: list[dict[str, Any]],
    accuracy: list[dict[str, Any]],
    opts: MatrixOptions,
    *,
    stores: dict[str, Any],
    paths: dict[str, Path],
    sim_paths: dict[str, Path],
) -> dict[str, Any]:
    """The result: ``params`` (the data sets as made), the table, both halves' rows and
    the notes that say how each column was made."""
    from hotset.data import Manifest

    sizes = {w: Manifest.load(p) for w, p in paths.items()}
    sim_sizes = {w: len(Manifest.load(p)) for w, p in sim_paths.items()}
    first = next(iter(stores))
    return {
        "params": {
            "stores": {p: s.as_dict() for p, s in stores.items()},
            "workloads": {
                w: {"n": len(m), "mean_sample_bytes": round(m.total_bytes / len(m))}
                for w, m in sizes.items()
            },
            "systems": list(opts.systems),
            "cache_fracs": list(opts.cache_fracs),
            "repeats": opts.repeats,
            "epochs": opts.epochs,
            "workers": opts.workers,
            "batch_size": opts.batch_size,
            "step_ms": opts.step_ms,
            "sim_samples": sim_sizes,
            "sim_seeds": list(opts.seeds),
            "sim_epochs": opts.sim_epochs,
            "sim_store": first,
        },
        "table": summarize(measured, accuracy),
        "measured": measured,
        "accuracy": accuracy,
        "notes": _notes(opts, first),
    }


def _notes(opts: MatrixOptions, sim_store: str) -> list[str]:
    """What the measured and simulated columns are, with this run's figures in them."""
    from hotset.bench.loader import TUNED_NOTE

    return [
        "Measured on this machine (real clock): one modeled server per job with the "
        "preset's latency per request, link bandwidth and requests in flight across all "
        f"{opts.workers} DataLoader workers; the accelerator's step is a {opts.step_ms:g} ms "
        f"wait per batch of {opts.batch_size}; {opts.epochs} epochs per row, the first one "
        "cold.",
        TUNED_NOTE.format(in_flight="the preset's requests in flight"),
        "vs_torch / vs_no_io: samples/s over the tuned DataLoader's and over the no-I/O "
        f"ceiling's, measured in the same group; median over {opts.repeats} groups, min and max "
        "beside it (the systems' order rotated each repeat).",
        "exact hits and substitutions are never merged; distinct_ids_per_epoch is coverage "
        "(distinct samples trained per epoch); mb_read_per_epoch counts every byte the "
        "store moved (reads, rebuilds, iCACHE's packer); read_per_delivered is that over "
        "the bytes training received.",
        "Simulated: sim_acc, sim_acc_delta_pt (vs pytorch, same seed and cache), "
        "sim_distinct_share and epochs_to_target come from the live simulator training a "
        f"small model for {opts.sim_epochs} epochs over seeds {list(opts.seeds)} "
        f"(store: {sim_store}); "
        "modeled_tta_s = epochs_to_target x the simulated set's training samples / this cell's "
        "measured samples/s (the measured rows read a smaller copy of the workload; the "
        "simulator trains on sim_samples). sim_acc_noise_pt: two standard errors of an "
        "accuracy difference over the validation samples and seeds.",
        "Losses fed back in the measured half are a stand-in: per-sample log-normal "
        "difficulties that persist across epochs (10% noise, 10% decay per epoch).",
    ]
