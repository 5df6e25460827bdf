"""The matrix as one picture: samples/s over torch per system, one panel per (workload, store).

Read in ten seconds: each panel is one store preset and one sample-size
workload; a group of bars is a system, one bar per cache size, with the
repeats' min..max as error bars; the dotted line is the no-I/O ceiling and the
dashed one plain PyTorch. A hatched bar is a system that trained less than 90%
of the ids per epoch (simulated coverage): fast, but on a subset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hotset.bench.matrix import REFERENCES


def panels(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(workload, preset) of every panel, in table order."""
    return list(dict.fromkeys((r["workload"], r["preset"]) for r in rows))


def bars(
    rows: list[dict[str, Any]], workload: str, preset: str
) -> tuple[list[str], list[float], dict[float, list[dict[str, Any]]]]:
    """Systems (x), cache sizes, and each size's rows in system order, for one panel."""
    mine = [r for r in rows if (r["workload"], r["preset"]) == (workload, preset)]
    systems = list(dict.fromkeys(r["system"] for r in mine if r["system"] not in REFERENCES))
    fracs = sorted({r["cache_frac"] for r in mine})
    by_frac = {
        f: [next(r for r in mine if r["system"] == s and r["cache_frac"] == f) for s in systems]
        for f in fracs
    }
    return systems, fracs, by_frac


def _reference(rows: list[dict[str, Any]], workload: str, preset: str, name: str) -> float:
    got = [
        r["vs_torch"]
        for r in rows
        if (r["workload"], r["preset"], r["system"]) == (workload, preset, name)
    ]
    return sum(got) / len(got) if got else 0.0


def plot(result: dict[str, Any], path: Path) -> Path:
    """Draw every panel of ``result['table']`` into ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["table"]
    cells = panels(rows)
    workloads = list(dict.fromkeys(w for w, _ in cells))
    presets = list(dict.fromkeys(p for _, p in cells))
    fig, axes = plt.subplots(
        len(workloads), len(presets), figsize=(5.2 * len(presets), 3.6 * len(workloads)),
        squeeze=False, sharey="row",
    )  # fmt: skip
    params = result["params"]
    for (workload, preset), ax in zip(
        cells, [axes[workloads.index(w)][presets.index(p)] for w, p in cells], strict=True
    ):
        _panel(ax, rows, workload, preset)
        store = params["stores"][preset]
        mean_kb = params["workloads"][workload]["mean_sample_bytes"] / 1e3
        bw = store.get("bandwidth_mb_s")
        ax.set_title(
            f"{workload} ({mean_kb:.0f} kB/sample) on {preset}\n"
            f"{store['latency_ms']:g} ms, {bw if bw is not None else 'unlimited'} MB/s, "
            f"{store['max_concurrency']} in flight",
            fontsize=8,
        )
    fig.suptitle(
        "samples/s vs a tuned PyTorch DataLoader (measured, median of "
        f"{params['repeats']} repeats; bars per cache size; hatched: trains <90% of ids/epoch)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _panel(ax: Any, rows: list[dict[str, Any]], workload: str, preset: str) -> None:
    systems, fracs, by_frac = bars(rows, workload, preset)
    width = 0.8 / max(1, len(fracs))
    for k, frac in enumerate(fracs):
        cells = by_frac[frac]
        xs = [i + (k - (len(fracs) - 1) / 2) * width for i in range(len(systems))]
        mid = [c["vs_torch"] for c in cells]
        err = [
            [m - c["vs_torch_min"] for m, c in zip(mid, cells, strict=True)],
            [c["vs_torch_max"] - m for m, c in zip(mid, cells, strict=True)],
        ]
        hatches = ["//" if (c.get("sim_distinct_share") or 1.0) < 0.9 else "" for c in cells]
        drawn = ax.bar(xs, mid, width, yerr=err, capsize=2, label=f"cache {frac:.0%}")
        for bar, hatch in zip(drawn, hatches, strict=True):
            bar.set_hatch(hatch)
    ax.axhline(1.0, color="black", ls="--", lw=0.8)
    ax.axhline(_reference(rows, workload, preset, "no-io"), color="grey", ls=":", lw=1)
    ax.set_xticks(range(len(systems)), systems, rotation=40, fontsize=7)
    ax.set_ylabel("x torch", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=6, loc="upper left")
