"""``hotset bench hitratio``: what each system's cache serves, against Belady's MIN.

For every workload × system × cache fraction, one cell
(:func:`hotset.sim.cell.run_one`: a live-training run and Belady's bound on its
own request sequence); this module sweeps the cells, tabulates and plots them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hotset.bench.workloads import needs_chunks, workload_dir
from hotset.sim.cell import belady_hits, needs_training, run_one
from hotset.storage.presets import SIMULATED_DEFAULT, StoreModel

# the cell's parts, re-exported: they were defined here before hotset.sim.cell
__all__ = [
    "DEFAULT_FRACS",
    "DEFAULT_SYSTEMS",
    "belady_hits",
    "needs_training",
    "plot",
    "run",
    "run_one",
]

DEFAULT_SYSTEMS = ("pytorch", "fifo", "lru", "lfu", "minio", "sh_lru", "shade", "emul_quiv")
DEFAULT_FRACS = (0.1, 0.2, 0.4, 0.6, 0.8)


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
    store: StoreModel = SIMULATED_DEFAULT,
) -> dict[str, Any]:
    """Every cell of the sweep, a flat table, and the figure; ``store`` is the modeled
    store every run reads from (the default is what this suite always modeled)."""
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
                system,
                dirs[workload],
                cache_frac=frac,
                epochs=epochs,
                seed=seed,
                workload=workload,
                **store.link(),
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
            "store": store.as_dict(),
        },
        "table": table,
        "runs": rows,
        "notes": [
            "Simulated I/O: each run is the live-training simulator (virtual-clock store, "
            f"{store.describe()}); hits, substitutions and reads are counted decisions and "
            "real reads.",
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
