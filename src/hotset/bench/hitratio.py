"""``hotset bench hitratio``: what each system's cache serves, against Belady's MIN.

For every workload × system × cache fraction, one cell
(:func:`hotset.sim.cell.run_one`: a live-training run and Belady's bound on its
own request sequence); this module sweeps the cells, tabulates and plots them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from hotset import options as typed
from hotset.bench.workloads import DEFAULT_DATA_DIR, needs_chunks, workload_dir
from hotset.errors import HotsetError
from hotset.options import cli
from hotset.sim.cell import belady_hits, needs_training, run_one
from hotset.storage.presets import SIMULATED_DEFAULT, StoreModel

# the cell's parts, re-exported: they were defined here before hotset.sim.cell
__all__ = [
    "DEFAULT_FRACS",
    "DEFAULT_SYSTEMS",
    "HitratioOptions",
    "ServiceSeries",
    "belady_hits",
    "needs_training",
    "plot",
    "run",
    "run_one",
    "service_series",
]

DEFAULT_SYSTEMS = ("pytorch", "fifo", "lru", "lfu", "minio", "sh_lru", "shade", "emul_quiv")
DEFAULT_FRACS = (0.1, 0.2, 0.4, 0.6, 0.8)


@dataclass(frozen=True)
class ServiceSeries:
    """One system's curve on one workload, cache sizes ascending: what :func:`plot` draws.

    Exact hits and substitutions stay two series (a substitution trains another
    sample than the one asked for, so merging them would flatter Quiver's kind of
    cache); coverage is the share of training ids trained per epoch, because a
    cache that serves much while training a third of the data (SHADE) is no win
    that a hit ratio alone can show.
    """

    system: str
    fracs: tuple[float, ...]
    exact: tuple[float, ...]
    substituted: tuple[float, ...]
    coverage: tuple[float, ...]
    exact_all: tuple[float, ...]
    belady_all: tuple[float, ...]


_SERIES_KEYS = (
    "workload",
    "system",
    "cache_frac",
    "exact_hit_ratio",
    "substitution_ratio",
    "coverage_after_first",
    "exact_hit_ratio_all",
    "belady_hit_ratio_all",
)


def _one_series(system: str, rows: Sequence[dict[str, Any]]) -> ServiceSeries:
    """``system``'s rows of one workload as one series, cache sizes ascending."""
    pts = sorted((r for r in rows if r["system"] == system), key=lambda r: r["cache_frac"])

    def col(key: str) -> tuple[float, ...]:
        return tuple(float(r[key]) for r in pts)

    return ServiceSeries(
        system=system,
        fracs=col("cache_frac"),
        exact=col("exact_hit_ratio"),
        substituted=col("substitution_ratio"),
        coverage=col("coverage_after_first"),
        exact_all=col("exact_hit_ratio_all"),
        belady_all=col("belady_hit_ratio_all"),
    )


def service_series(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, ServiceSeries]]:
    """Per workload, per system (both in first-seen order): the series :func:`plot` draws.

    A row without one of the counts is refused rather than drawn as zero: a missing
    substitution series would look like a cache that never substitutes.
    """
    if not rows:
        raise HotsetError("plot: no rows to draw")
    for row in rows:
        missing = [k for k in _SERIES_KEYS if k not in row]
        if missing:
            raise HotsetError(
                f"plot: a row of system {row.get('system', '?')!r} lacks {missing}; "
                "rerun the suite (older result files have no coverage_after_first)"
            )
    out: dict[str, dict[str, ServiceSeries]] = {}
    for workload in dict.fromkeys(r["workload"] for r in rows):
        mine = [r for r in rows if r["workload"] == workload]
        out[workload] = {s: _one_series(s, mine) for s in dict.fromkeys(r["system"] for r in mine)}
    return out


def _lighter(color: str, amount: float = 0.6) -> tuple[float, float, float]:
    """``color`` blended towards white: the substitution shade of a system's colour."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(color)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def _draw_service(ax: Any, series: dict[str, ServiceSeries], colors: dict[str, str]) -> None:
    """Grouped bars per cache size: exact hits (solid) under substitutions (light,
    hatched), a white diamond at each bar's coverage."""
    fracs = sorted({f for s in series.values() for f in s.fracs})
    width = 0.84 / len(series)
    for i, s in enumerate(series.values()):
        xs = [fracs.index(f) - 0.42 + width * (i + 0.5) for f in s.fracs]
        color = colors[s.system]
        ax.bar(xs, s.exact, width, color=color, edgecolor="white", linewidth=0.3)
        ax.bar(
            xs, s.substituted, width, bottom=s.exact, color=_lighter(color),
            edgecolor=color, hatch="////", linewidth=0,
        )  # fmt: skip
        ax.scatter(
            xs, s.coverage, marker="D", s=22, facecolor="white", edgecolor="black",
            linewidth=0.9, zorder=3,
        )  # fmt: skip
    ax.set_xticks(range(len(fracs)), [f"{f:.0%}" for f in fracs])
    ax.set_xlabel("cache size (share of training bytes)")
    ax.set_ylabel("share of requests (bars) / of training ids (diamonds)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3, axis="y")


def _draw_bound(ax: Any, series: dict[str, ServiceSeries], colors: dict[str, str]) -> None:
    """Exact hits over the whole run against Belady's bound on the same sequence."""
    for s in series.values():
        xs = list(s.fracs)
        ax.plot(xs, s.exact_all, "o-", color=colors[s.system], ms=4)
        ax.plot(xs, s.belady_all, "--", color=colors[s.system], lw=0.8)
    ax.set_xlabel("cache size (share of training bytes)")
    ax.set_ylabel("exact-hit ratio, whole run")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)


def _legend_handles(colors: dict[str, str]) -> list[Any]:
    """One patch per system, then the key to the shades and the diamond."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return [
        *(Patch(facecolor=c, label=name) for name, c in colors.items()),
        Patch(facecolor="0.35", label="exact hits (solid)"),
        Patch(facecolor="0.85", edgecolor="0.35", hatch="////", label="substitutions (light, hatched)"),
        Line2D([], [], marker="D", ls="", mfc="white", mec="black", label="coverage: ids trained per epoch / training ids"),
        Line2D([], [], color="0.35", ls="--", label="Belady's bound (right panels)"),
    ]  # fmt: skip


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Per workload, a row of two panels: what the cache served in epochs 2..E (exact
    hits and substitutions stacked, never merged) with coverage on each bar, and exact
    hits over the whole run against Belady's bound on the same request sequence."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = service_series(rows)
    systems = dict.fromkeys(r["system"] for r in rows)
    colors = {name: f"C{i % 10}" for i, name in enumerate(systems)}
    fig, axes = plt.subplots(
        len(series), 2, figsize=(15, 4.4 * len(series) + 0.8), squeeze=False,
        gridspec_kw={"width_ratios": [2.3, 1]},
    )  # fmt: skip
    for (left, right), (workload, mine) in zip(axes, series.items(), strict=True):
        _draw_service(left, mine, colors)
        left.set_title(
            f"{workload}: served from cache per request, epochs 2..E "
            "(exact hits + substitutions, stacked); diamonds: coverage",
            fontsize=9,
        )
        _draw_bound(right, mine, colors)
        right.set_title(f"{workload}: exact hits over the run vs Belady (dashed)", fontsize=9)
    handles = _legend_handles(colors)
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), fontsize=8)
    rows_of_legend = -(-len(handles) // 6)
    fig.tight_layout(rect=(0, 0.05 * rows_of_legend / len(series), 1, 1))
    try:
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise HotsetError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)


@dataclass(frozen=True)
class HitratioOptions:
    """What ``bench hitratio`` sweeps; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike.

    ``systems`` None is the suite's default list (:data:`DEFAULT_SYSTEMS`, see
    :attr:`system_list`); ``data_dir`` is where the workloads are generated once and
    reused between runs.
    """

    workloads: tuple[str, ...] = field(default=("synth", "digits"), metadata=cli(parse=typed.texts))
    systems: tuple[str, ...] | None = field(
        default=None,
        metadata=cli(
            "Comma list (default: baselines, sh_lru, shade, emul_quiv).",
            parse=typed.systems_or(DEFAULT_SYSTEMS),
        ),
    )
    fracs: tuple[float, ...] = field(default=DEFAULT_FRACS, metadata=cli(parse=typed.floats))
    epochs: int = field(default=10, metadata=cli(type=click.IntRange(min=2)))
    seed: int = field(default=0, metadata=cli(type=click.IntRange(min=0)))
    synth_n: int = field(default=20_000, metadata=cli(type=click.IntRange(min=200)))
    data_dir: Path = field(
        default=DEFAULT_DATA_DIR,
        metadata=cli(
            "Where the workloads are generated once and reused.",
            type=click.Path(file_okay=False, path_type=Path),
        ),
    )

    def __post_init__(self) -> None:
        """A bad fraction or system spec fails before any work, naming itself."""
        from hotset.systems.registry import parse_system

        bad = [f for f in self.fracs if not 0 < f <= 1]
        if bad:
            raise HotsetError(f"--fracs: each fraction must be in (0, 1], got {bad[0]}")
        for system in self.system_list:
            parse_system(system)  # unknown names (or options syntax)

    @property
    def system_list(self) -> tuple[str, ...]:
        """The systems swept: those given, else :data:`DEFAULT_SYSTEMS`."""
        return DEFAULT_SYSTEMS if self.systems is None else self.systems


def run(
    opts: HitratioOptions = HitratioOptions(),
    *,
    figure: Path | None = None,
    progress: bool = True,
    store: StoreModel = SIMULATED_DEFAULT,
) -> dict[str, Any]:
    """Every cell of the sweep, a flat table, and the figure; ``store`` is the modeled
    store every run reads from (the default is what this suite always modeled)."""
    from tqdm import tqdm

    workloads, systems, fracs = opts.workloads, opts.system_list, opts.fracs
    epochs, seed, synth_n = opts.epochs, opts.seed, opts.synth_n
    cells = [(w, s, f) for w in workloads for s in systems for f in fracs]
    packed = needs_chunks(systems)
    dirs = {
        w: workload_dir(
            w, data_dir=opts.data_dir, synth_n=synth_n, progress=progress, packed=packed
        )
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
        "notes": _notes(store),
    }


def _notes(store: StoreModel) -> list[str]:
    """How the rows were made and what each column counts, for the result's reader."""
    return [
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
        "exact_hit_ratio and substitution_ratio count epochs 2..E and are never merged "
        "(the figure stacks them, with coverage_after_first -- distinct ids trained per "
        "epoch over n_train -- on each bar); "
        "exact_hit_ratio_all and belady_hit_ratio_all count the whole run; "
        "belady_hit_ratio_all is Belady's MIN replayed on that row's own request sequence, holding "
        "as many items as the byte budget could ever hold (the smallest samples): a proven "
        "upper bound on any policy's exact hits for that sequence.",
    ]
