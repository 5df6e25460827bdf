"""The demo's picture: four panels a person reads in ten seconds.

Served from cache (exact hits and substitutions stacked, never merged), bytes
read from the store per epoch, samples/s over the tuned DataLoader with the
repeats' spread, and the simulated accuracy with the coverage written on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot(result: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["table"]
    names = [r["system"] for r in rows]
    xs = list(range(len(rows)))
    fig, (served, read, speed, acc) = plt.subplots(1, 4, figsize=(17, 3.9))
    exact = [r.get("exact_hit_ratio") or 0.0 for r in rows]
    subst = [r.get("substitution_ratio") or 0.0 for r in rows]
    served.bar(xs, exact, label="exact hit", color="C0")
    served.bar(xs, subst, bottom=exact, label="substitution", color="C1")
    served.set_title("served from cache (share of requests)", fontsize=9)
    served.set_ylim(0, 1.05)
    served.legend(fontsize=7)
    read.bar(xs, [r["mb_read_per_epoch"] for r in rows], color="C2")
    read.set_title("MB read from the store per epoch", fontsize=9)
    mid = [r["vs_torch"] for r in rows]
    err = [
        [m - r["vs_torch_min"] for m, r in zip(mid, rows, strict=True)],
        [r["vs_torch_max"] - m for m, r in zip(mid, rows, strict=True)],
    ]
    speed.bar(xs, mid, yerr=err, capsize=3, color="C3")
    speed.axhline(1.0, color="black", ls="--", lw=0.8)
    speed.set_title(f"samples/s vs torch (min-max of {result['params']['repeats']})", fontsize=9)
    accs = [100 * (r.get("sim_acc") or 0.0) for r in rows]
    acc.bar(xs, accs, color="C4")
    for x, r, a in zip(xs, rows, accs, strict=True):
        acc.text(x, a, f"{r.get('sim_distinct_share') or 1.0:.0%}", ha="center", va="bottom",
                 fontsize=7)  # fmt: skip
    acc.set_title("accuracy % (simulated; label: coverage per epoch)", fontsize=9)
    for ax in (served, read, speed, acc):
        ax.set_xticks(xs, names, rotation=40, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    p = result["params"]
    store = p["store"]
    fig.suptitle(
        f"hotset demo on {store['preset'] or 'a custom store'} ({store['latency_ms']:g} ms, "
        f"{store['bandwidth_mb_s'] or 'unlimited'} MB/s, {store['max_concurrency']} in flight): "
        f"{p['n']} {p['workload']} samples of {p['mean_sample_bytes'] / 1e3:.0f} kB mean, "
        f"cache {p['cache_frac']:.0%}, step {p['step_ms']:g} ms per batch of {p['batch_size']}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
