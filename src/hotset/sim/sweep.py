"""Hit ratio against cache size, for several policies: the SHADE Fig. 7 picture.

A sweep is the trace simulator run once per (policy, cache size); each result
is the contract object plus the swept size (``cache_frac`` or ``cache_items``)
so the list still means something on its own. The plot is drawn with
matplotlib's Agg backend, imported only when a plot is asked for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hotset.engine.arrays import IntArray
from hotset.errors import HotsetError
from hotset.sim.trace import simulate_epochs

# policies often coincide (MinIO and Belady on random permutations): vary the
# marker and the dash so every line stays visible under the others
_MARKERS = ("o", "s", "^", "D", "v", "x", "*", "P")
_LINES = ("-", "--", "-.", ":")


def sweep(
    epochs: Sequence[IntArray],
    policies: Sequence[str],
    *,
    cache_fracs: Sequence[float] | None = None,
    cache_items: Sequence[int] | None = None,
    sizes: IntArray | None = None,
    n: int | None = None,
    seed: int = 0,
    planned: bool = False,
    verbose: bool = False,
) -> list[dict[str, Any]]:
    """One result per policy per cache size, policies outermost, sizes ascending as given."""
    if (cache_fracs is None) == (cache_items is None):
        raise HotsetError("give exactly one of --cache-items or --cache-frac")
    if not policies:
        raise HotsetError("give at least one policy")
    key = "cache_frac" if cache_fracs is not None else "cache_items"
    values: Sequence[float | int] = cache_fracs if cache_fracs is not None else cache_items or []
    results: list[dict[str, Any]] = []
    for policy in policies:
        for value in values:
            result = simulate_epochs(
                epochs,
                policy,
                cache_frac=float(value) if key == "cache_frac" else None,
                cache_items=int(value) if key == "cache_items" else None,
                sizes=sizes,
                n=n,
                seed=seed,
                planned=planned,
                verbose=verbose,
            )
            result[key] = value
            results.append(result)
    return results


def plot_sweep(results: Sequence[dict[str, Any]], path: str | Path, *, title: str = "") -> Path:
    """Draw hit ratio against cache size, one line per policy; write ``path`` (PNG)."""
    if not results:
        raise HotsetError("nothing to plot: the sweep has no results")
    key = "cache_frac" if "cache_frac" in results[0] else "cache_items"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.0), dpi=120)
    try:
        policies = list(dict.fromkeys(r["policy"] for r in results))
        for i, policy in enumerate(policies):
            rows = sorted((r for r in results if r["policy"] == policy), key=lambda r: r[key])
            xs = [r[key] * (100 if key == "cache_frac" else 1) for r in rows]
            ax.plot(
                xs,
                [r["hit_ratio"] * 100 for r in rows],
                marker=_MARKERS[i % len(_MARKERS)],
                linestyle=_LINES[i % len(_LINES)],
                label=policy,
            )
        ax.set_xlabel("cache size (% of dataset)" if key == "cache_frac" else "cache size (items)")
        ax.set_ylabel("hit ratio (%)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend()
        if title:
            ax.set_title(title)
        fig.tight_layout()
        out = Path(path)
        try:
            fig.savefig(out, format="png")
        except OSError as exc:
            raise HotsetError(f"cannot write plot {out}: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)
    return out


def write_sweep_json(results: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """The sweep's results as a JSON list (written beside the plot)."""
    out = Path(path)
    try:
        out.write_text(json.dumps(list(results), indent=2) + "\n")
    except OSError as exc:
        raise HotsetError(f"cannot write {out}: {exc.strerror or exc}") from exc
    return out
