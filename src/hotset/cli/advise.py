"""``hotset advise``: which cache size pays, for this data set and this storage (simulated)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from hotset.cli.json_option import json_path_option
from hotset.cli.store_option import simulated_store, simulated_store_options, store_line
from hotset.errors import HotsetError

#: each bound stands right after the ratio it bounds (the same epochs), and nothing else
#: sits beside it: "bound" caps "exact hits", "belady (run)" caps "exact (run)"
_COLUMNS = (
    ("size", "cache_frac", "{:.0%}"),
    ("exact hits", "exact_hit_ratio", "{:.3f}"),
    ("bound", "exact_hit_bound", "{:.3f}"),
    ("substituted", "substitution_ratio", "{:.3f}"),
    ("fetched ahead", "fetched_ahead_ratio", "{:.3f}"),
    ("coverage", "coverage_after_first", "{:.0%}"),
    ("exact (run)", "exact_hit_ratio_all", "{:.3f}"),
    ("belady (run)", "belady_hit_ratio_all", "{:.3f}"),
    ("cache", "cache_bytes", "bytes"),
    ("requests/epoch", "storage_requests_per_epoch_after_first", "{:.0f}"),
    ("bytes read/epoch", "storage_bytes_per_epoch_after_first", "bytes"),
    ("distinct trained", "unique_ids_trained_after_first", "{:.0f}"),
    ("epoch s (modeled)", "modeled_epoch_seconds_after_first", "{:.2f}"),
)


def _cell(value: float, fmt: str) -> str:
    """One table cell; byte counts in units a person reads at a glance."""
    from hotset.units import format_bytes

    return format_bytes(value) if fmt == "bytes" else fmt.format(value)


def _floats(text: str, option: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise HotsetError(f"{option}: expected comma-separated numbers, got {text!r}") from None


@click.command("advise")
@click.option(
    "--dataset",
    required=True,
    type=click.Path(path_type=Path),
    help="A data set directory (manifest).",
)
@click.option("--systems", default="lru,minio,shade", show_default=True)
@click.option("--sizes", default="0.05,0.1,0.2,0.4,0.6,0.8", show_default=True)
@click.option("--target", type=float, default=0.8, show_default=True, help="Hit ratio wanted.")
@click.option("--epochs", type=click.IntRange(min=2), default=4, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@simulated_store_options
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write a PNG: per system and size, exact hits and substitutions stacked with "
    "coverage on each bar, and exact hits against Belady's bound.",
)
@json_path_option("Write the result as JSON to PATH; bare --json prints only the JSON on stdout.")
def advise(
    dataset: Path,
    systems: str,
    sizes: str,
    target: float,
    epochs: int,
    seed: int,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    plot: Path | None,
    as_json: Path | None,
) -> None:
    """Replay each system over a grid of cache sizes on DATASET (simulated) and advise.

    Prints, per system and size, exact hits and substitutions of epochs 2..E
    (never merged) and coverage (distinct samples trained per epoch over the
    training samples), exact hits over the whole run next to Belady's bound on the
    same sequence, storage reads per epoch (requests and bytes), distinct samples
    trained per epoch, and the modeled epoch I/O time; then the knee and the
    smallest size reaching --target. Sizes are fractions in (0, 1] of the
    training bytes in the manifest.

    Modeled time: a virtual-clock store (--store PRESET, or --latency-ms per
    request, --bandwidth-mb-s, --concurrency in flight; by default 2 ms, 100 MB/s,
    4 in flight), no compute; each step waits for its misses. Knee: the size farthest above the chord joining the curve's ends
    (both axes scaled to [0, 1]).
    """
    from hotset.sim.advise import BOUND_NOTE, KNEE_NOTE, MODEL_NOTE
    from hotset.sim.advise import advise as run_advise
    from hotset.systems.registry import split_systems

    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    result = run_advise(
        dataset,
        systems=split_systems(systems),
        fracs=_floats(sizes, "--sizes"),
        epochs=epochs,
        seed=seed,
        **store.link(),
        target=target,
        progress=True,
    )
    result["store"] = store.as_dict()
    if as_json is not None and str(as_json) == "-":
        click.echo(json.dumps(result, indent=2))
        _draw(result, plot, err=True)
        return
    _echo_tables(result)
    click.echo("")
    for s in result["summary"]:
        click.echo(_answer_line(result, s, target))
    click.echo(f"auto (the loader's default) picks {_auto_line(dataset)}")
    click.echo(KNEE_NOTE)
    click.echo(BOUND_NOTE)
    click.echo(
        MODEL_NOTE.format(
            **store.link(),
        )
    )
    click.echo(store_line(store))
    _draw(result, plot, err=False)
    if as_json is not None:
        as_json.write_text(json.dumps(result, indent=2) + "\n")
        click.echo(f"wrote {as_json}")


def _draw(result: dict[str, Any], plot: Path | None, *, err: bool) -> None:
    """Write the plot if one was asked for; ``err`` keeps stdout pure JSON under bare --json."""
    if plot is None:
        return
    from hotset.bench.hitratio import plot as draw

    draw(result["table"], plot)
    click.echo(f"wrote {plot}", err=err)


def _echo_tables(result: dict[str, Any]) -> None:
    """One right-aligned table per system, its columns as wide as their widest cell."""
    for system in result["params"]["systems"]:
        click.echo(f"\n{system}")
        rows = [r for r in result["table"] if r["system"] == system]
        cells = [[_cell(r[key], fmt) for _, key, fmt in _COLUMNS] for r in rows]
        heads = [h for h, _, _ in _COLUMNS]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
        click.echo("  ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True)))
        for c in cells:
            click.echo("  ".join(x.rjust(w) for x, w in zip(c, widths, strict=True)))


def _answer_line(result: dict[str, Any], s: dict[str, Any], target: float) -> str:
    """One system's answer in words: its knee and what reaching ``target`` costs."""
    need = s[f"size_for_{target:g}"]
    answer = f"no size in the grid (best {s['best_exact_hit_ratio']:.3f})"
    if need is not None:
        # Coverage beside the answer: hits bought by training a subset are no win.
        row = next(
            r for r in result["table"] if r["system"] == s["system"] and r["cache_frac"] == need
        )
        answer = (
            f"{need:.0%} of the data ({_cell(s[f'bytes_for_{target:g}'], 'bytes')} of cache), "
            f"training {row['unique_ids_trained_after_first']:.0f} distinct samples per epoch "
            f"({row['coverage_after_first']:.0%} coverage); substitutions serve a further "
            f"{row['substitution_ratio']:.3f} of requests"
        )
    knee = (
        "no knee (returns do not diminish within the grid)"
        if s["knee"] is None
        else f"knee at {s['knee']:.0%}"
    )
    return f"{s['system']}: {knee}; {target:.0%} exact hits need {answer}"


def _auto_line(dataset: str | Path) -> str:
    """What ``system="auto"`` would pick on ``dataset``: the loader's rule and facts."""
    from hotset.data.chunks import ChunkLayout
    from hotset.systems.auto import choose

    packed = "://" not in str(dataset) and ChunkLayout.exists(dataset)
    return choose(packed=packed).describe()
