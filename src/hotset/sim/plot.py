"""One training simulation, epoch by epoch, as a picture (``hotset simulate --system --plot``).

Three panels, because no one number tells the story: the hit ratios (exact hits
and substitutions drawn apart, never summed), storage reads per epoch next to
the distinct samples trained (a cache that wins by training a subset shows it
here), and validation accuracy when the run trained a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hotset.errors import HotsetError


def _option_text(value: Any) -> str:
    """An option value as ``NAME[option=value]`` spells it (``true``, ``none``, ``0.05``)."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    return str(value)


def epochs_title(result: dict[str, Any]) -> str:
    """What was simulated, as the figure's title: the system with its options, and the
    cache as a share of the training bytes and in bytes.

    A PNG travels without its command line; without these a figure of SHADE at 5%
    and one of LRU at 40% look alike.
    """
    from hotset.units import format_bytes

    options = result.get("config", {}).get("options") or {}
    spec = str(result.get("system", "?"))
    if options:
        spec += "[" + ",".join(f"{k}={_option_text(v)}" for k, v in options.items()) + "]"
    frac = result.get("cache_frac")
    cache = "cache ?" if frac is None else f"cache {float(frac) * 100:g}% of training bytes"
    if result.get("capacity_bytes") is not None:
        cache += f" ({format_bytes(result['capacity_bytes'])})"
    return f"{spec}: {cache}, {len(result.get('epochs', []))} epochs (simulated)"


def plot_epochs(result: dict[str, Any], path: str | Path) -> Path:
    """Draw ``result`` (:func:`hotset.sim.live.run_live`'s) to the PNG ``path``."""
    rows = list(result.get("epochs", []))
    if not rows:
        raise HotsetError("plot: the simulation has no epochs to draw")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [r["epoch"] for r in rows]
    fig, (hits, reads, acc) = plt.subplots(1, 3, figsize=(14, 3.8))
    requests = [max(1, r["requests"]) for r in rows]
    hits.plot(
        epochs,
        [r["exact_hits"] / q for r, q in zip(rows, requests, strict=True)],
        "o-",
        label="exact hits",
    )
    hits.plot(
        epochs,
        [r["substitutions"] / q for r, q in zip(rows, requests, strict=True)],
        "s--",
        label="substitutions",
    )
    hits.set_ylim(0, 1.02)
    hits.set_title("share of requests")
    hits.legend(fontsize=8)
    reads.plot(epochs, [r["storage_reads"] for r in rows], "o-", label="storage reads")
    reads.plot(epochs, [r["unique_ids_trained"] for r in rows], "s--", label="distinct trained")
    reads.set_title("per epoch")
    reads.legend(fontsize=8)
    accuracy = [r.get("val_accuracy") for r in rows]
    if any(a is not None for a in accuracy):
        acc.plot(
            [e for e, a in zip(epochs, accuracy, strict=True) if a is not None],
            [a for a in accuracy if a is not None],
            "o-",
        )
        acc.set_title("validation accuracy")
    else:
        acc.text(0.5, 0.5, "no model trained", ha="center", va="center")
        acc.set_axis_off()
    for ax in (hits, reads, acc):
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    fig.suptitle(epochs_title(result), fontsize=10)
    fig.tight_layout()
    out = Path(path)
    try:
        fig.savefig(out, dpi=110)
    except OSError as exc:
        raise HotsetError(f"cannot write {out}: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)
    return out
