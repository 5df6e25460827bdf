"""``hotset advise``: which cache size pays, for this data set and this storage (simulated)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hotset.errors import HotsetError

_COLUMNS = (
    ("size", "cache_frac", "{:.0%}"),
    ("exact hits", "exact_hit_ratio", "{:.3f}"),
    ("substituted", "substitution_ratio", "{:.3f}"),
    ("exact (run)", "exact_hit_ratio_all", "{:.3f}"),
    ("belady (run)", "belady_hit_ratio_all", "{:.3f}"),
    ("reads/epoch", "reads_per_epoch_after_first", "{:.0f}"),
    ("distinct trained", "unique_ids_trained_after_first", "{:.0f}"),
    ("epoch s (modeled)", "modeled_epoch_seconds_after_first", "{:.2f}"),
)


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
@click.option("--latency-ms", type=click.FloatRange(min=0), default=2.0, show_default=True)
@click.option("--bandwidth-mb-s", type=click.FloatRange(min=0, min_open=True), default=100.0)
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--json", "as_json", type=click.Path(dir_okay=False, path_type=Path), default=None)
def advise(
    dataset: Path,
    systems: str,
    sizes: str,
    target: float,
    epochs: int,
    seed: int,
    latency_ms: float,
    bandwidth_mb_s: float,
    plot: Path | None,
    as_json: Path | None,
) -> None:
    """Replay each system over a grid of cache sizes on DATASET (simulated) and advise.

    Prints, per system and size, exact hits and substitutions of epochs 2..E
    (never merged), exact hits over the whole run next to Belady's bound on the
    same sequence, storage reads and distinct samples trained per epoch, and the
    modeled epoch I/O time; then the knee and the smallest size reaching --target.
    """
    from hotset.sim.advise import advise as run_advise
    from hotset.systems.registry import split_systems

    result = run_advise(
        dataset,
        systems=split_systems(systems),
        fracs=_floats(sizes, "--sizes"),
        epochs=epochs,
        seed=seed,
        latency_ms=latency_ms,
        bandwidth_mb_s=bandwidth_mb_s,
        target=target,
        progress=True,
    )
    for system in result["params"]["systems"]:
        click.echo(f"\n{system}")
        rows = [r for r in result["table"] if r["system"] == system]
        cells = [[fmt.format(r[key]) for _, key, fmt in _COLUMNS] for r in rows]
        heads = [h for h, _, _ in _COLUMNS]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
        click.echo("  ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True)))
        for c in cells:
            click.echo("  ".join(x.rjust(w) for x, w in zip(c, widths, strict=True)))
    click.echo("")
    for s in result["summary"]:
        need = s[f"size_for_{target:g}"]
        answer = f"{need:.0%} of the data" if need is not None else "no size in the grid"
        knee = (
            "no knee (returns do not diminish within the grid)"
            if s["knee"] is None
            else f"knee at {s['knee']:.0%}"
        )
        click.echo(f"{s['system']}: {knee}; {target:.0%} exact hits need {answer}")
    click.echo("(simulated: virtual-clock storage, see `hotset advise --help`)")
    if plot is not None:
        from hotset.bench.hitratio import plot as draw

        draw(result["table"], plot)
        click.echo(f"wrote {plot}")
    if as_json is not None:
        as_json.write_text(json.dumps(result, indent=2) + "\n")
        click.echo(f"wrote {as_json}")
