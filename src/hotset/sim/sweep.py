"""Hit ratio against cache size, for several policies: the SHADE Fig. 7 picture.

A sweep is the trace simulator run once per (policy, cache size); each result
is the contract object plus the swept size (``cache_frac`` or ``cache_items``)
so the list still means something on its own. The plot is drawn with
matplotlib's Agg backend, imported only when a plot is asked for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class SweepSeries:
    """One policy's line: cache sizes ascending, its exact-hit and substitution ratios.

    ``substituted`` is None when the results do not carry the count (a sweep run
    without ``verbose``); ``substitutes`` says whether the policy can substitute at
    all, so a plot can say that a part of what it serves is not drawn.
    """

    policy: str
    xs: tuple[float, ...]
    exact: tuple[float, ...]
    substituted: tuple[float, ...] | None
    substitutes: bool


def sweep_series(results: Sequence[dict[str, Any]]) -> list[SweepSeries]:
    """Per policy (first-seen order), what :func:`plot_sweep` draws: exact hits and
    substitutions as shares of requests, kept apart."""
    from hotset.policies.registry import policy_class

    if not results:
        raise HotsetError("nothing to plot: the sweep has no results")
    key = "cache_frac" if "cache_frac" in results[0] else "cache_items"
    out = []
    for policy in dict.fromkeys(r["policy"] for r in results):
        rows = sorted((r for r in results if r["policy"] == policy), key=lambda r: r[key])
        known = all("substitutions" in r for r in rows)
        out.append(
            SweepSeries(
                policy=policy,
                xs=tuple(float(r[key]) for r in rows),
                exact=tuple(r["hits"] / r["requests"] for r in rows),
                substituted=tuple(r["substitutions"] / r["requests"] for r in rows)
                if known
                else None,
                substitutes=policy_class(policy).capabilities.substitutes,
            )
        )
    return out


def plot_sweep(results: Sequence[dict[str, Any]], path: str | Path, *, title: str = "") -> Path:
    """Draw exact-hit ratio against cache size, one line per policy, with substitutions
    stacked above it as a hatched band where the results carry them; write ``path`` (PNG)."""
    series = sweep_series(results)
    frac = "cache_frac" in results[0]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.0), dpi=120)
    try:
        for i, s in enumerate(series):
            xs = [x * (100 if frac else 1) for x in s.xs]
            exact = [h * 100 for h in s.exact]
            (line,) = ax.plot(
                xs, exact, marker=_MARKERS[i % len(_MARKERS)],
                linestyle=_LINES[i % len(_LINES)], label=s.policy,
            )  # fmt: skip
            if s.substituted is not None and any(s.substituted):
                top = [e + h * 100 for e, h in zip(exact, s.substituted, strict=True)]
                ax.fill_between(
                    xs, exact, top, facecolor="none", edgecolor=line.get_color(),
                    hatch="////", linewidth=0, label=f"{s.policy}: + substitutions",
                )  # fmt: skip
        ax.set_xlabel("cache size (% of dataset)" if frac else "cache size (items)")
        banded = any(s.substituted is not None and any(s.substituted) for s in series)
        ax.set_ylabel("exact-hit ratio (%)" + ("; hatched: + substitutions" if banded else ""))
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        undrawn = [s.policy for s in series if s.substitutes and s.substituted is None]
        note = (
            f"not drawn: substitutions of {', '.join(undrawn)} (-v draws them)" if undrawn else ""
        )
        if title or note:
            ax.set_title("\n".join(t for t in (title, note) if t), fontsize=9)
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
