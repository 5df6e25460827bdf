"""``hotset bench placement``: Quiver's benefit-aware placement, open loop vs closed."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option


@click.command("placement")
@click.option("--n", "n", type=click.IntRange(min=64), default=600, show_default=True)
@click.option("--epochs", type=click.IntRange(min=2), default=5, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True)
@click.option(
    "--probe", type=click.IntRange(min=2), default=8, show_default=True, help="Batches a window."
)
@click.option(
    "--latency-ms",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    help="Each job's modeled store: ms a request, one at a time.",
)
@click.option(
    "--step-ms",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="The gpu job's model step per batch (the io job has none).",
)
@click.option(
    "--cache-frac",
    type=click.FloatRange(min=0, min_open=True, max=2),
    default=1.0,
    show_default=True,
    help="The namespace's budget over the larger data set's bytes.",
)
@click.option(
    "--lead-epochs",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Epochs the gpu job trains before the io job starts.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("placement")
@json_option()
@root_option
def command(
    n: int,
    epochs: int,
    batch_size: int,
    probe: int,
    latency_ms: float,
    step_ms: float,
    cache_frac: float,
    lead_epochs: int,
    seed: int,
    progress: bool,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Two jobs on one namespace, one waiting on storage and one whose step hides its
    reads: open loop (probe measured, applied nowhere) vs closed (placement applied)."""
    from hotset.bench.quiverloop import Params, run

    params = Params(
        n=n,
        epochs=epochs,
        batch_size=batch_size,
        probe=probe,
        latency_ms=latency_ms,
        step_ms=step_ms,
        cache_frac=cache_frac,
        lead_epochs=lead_epochs,
        seed=seed,
    )
    finish(name, run(params, progress=progress), root, as_json)
