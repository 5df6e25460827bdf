"""``hotset demo``: the headline job on the embedded default, no server needed.

It makes a small synthetic dataset (or reuses the one it made before), trains
the same small model through PyTorch's DataLoader and through hotset's loader
under several systems, all reading one modeled slow store, and prints one table.
Everything it measures lands in ``--out`` as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from hotset.bench.demo import DEFAULT_SYSTEMS


def _cell(value: object, width: int, spec: str) -> str:
    """A right-aligned table cell; a missing value is a dash of the same width."""
    return f"{'-':>{width}}" if value is None else format(value, f">{width}{spec}")


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-out"),
    show_default=True,
)
@click.option(
    "--n",
    "n",
    type=click.IntRange(min=200),
    default=5000,
    show_default=True,
    help="Synthetic samples.",
)
@click.option("--epochs", type=click.IntRange(min=1), default=7, show_default=True)
@click.option("--cache-frac", type=float, default=0.2, show_default=True)
@click.option(
    "--systems",
    default=",".join(DEFAULT_SYSTEMS),
    show_default=True,
    help="Comma list of NAME or NAME[option=value,...].",
)
@click.option("--workers", type=click.IntRange(min=0), default=2, show_default=True)
@click.option("--latency-ms", type=click.FloatRange(min=0), default=2.0, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
def demo(
    out: Path,
    n: int,
    epochs: int,
    cache_frac: float,
    systems: str,
    workers: int,
    latency_ms: float,
    seed: int,
) -> None:
    """Train one small model through PyTorch's DataLoader and hotset's systems; compare."""
    from hotset.bench.demo import run
    from hotset.systems.registry import parse_system, split_systems

    names = tuple(split_systems(systems))  # NAME[a=1,b=2] keeps its commas
    for name in names:
        parse_system(name)  # an unknown system or option fails before any work
    out.mkdir(parents=True, exist_ok=True)
    result = run(
        out=out,
        n=n,
        epochs=epochs,
        cache_frac=cache_frac,
        systems=names,
        seed=seed,
        workers=workers,
        latency_ms=latency_ms,
        log=lambda msg: click.echo(msg, err=True),
    )
    path = out / "demo-results.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    from hotset.bench.demo import plot

    figure = plot(result, out / "demo-results.png")
    p = result["params"]
    click.echo("")
    click.echo(
        f"hotset demo: {p['n_train']} training samples (32x32 synthetic), {epochs} epochs, "
        f"{workers} workers, cache {cache_frac:.0%} of the training bytes in shared memory."
    )
    click.echo(
        f"Store: {latency_ms:g} ms per request, {p['concurrency']} requests in flight (real sleeping)."
    )
    header = (
        f"{'system':<9}{'exact-hit':>10}{'distinct':>10}{'reads/epoch':>13}{'samples/s':>11}"
        f"{'vs torch':>10}{'stall':>8}{'val acc':>9}"
    )
    click.echo(header)
    click.echo("-" * len(header))
    for r in result["table"]:
        click.echo(
            f"{r['system']:<9}{_cell(r['exact_hit_ratio'], 10, '.3f')}"
            f"{r['unique_ids_trained_per_epoch']:>10.0f}"
            f"{r['storage_reads_per_epoch']:>13.0f}{r['samples_per_s']:>11.0f}"
            f"{_cell(r['speedup_vs_torch'], 9, '.2f')}x{r['stall_share']:>8.0%}{r['val_accuracy']:>9.3f}"
        )
    click.echo(
        "\nexact-hit: requested id served from cache, epochs 2..E; distinct: samples trained "
        "per epoch (coverage); stall: share of wall time "
        "the training loop waited for data.\ntorch = plain torch.utils.data.DataLoader; "
        "pytorch = hotset's loader with random order and no cache."
    )
    click.echo(f"wrote {path} and {figure}")
