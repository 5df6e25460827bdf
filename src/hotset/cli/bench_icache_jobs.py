"""``hotset bench icachejobs``: iCACHE's multi-job experiment (Fig. 14), simulated."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from hotset.bench.workloads import parse_floats
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option


@click.command("icachejobs")
@click.option("--cache-fracs", default="0.3,0.5", show_default=True)
@click.option("--n", "n", type=click.IntRange(min=100), default=50_000, show_default=True)
@click.option("--epochs", type=click.IntRange(min=1), default=15, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=128, show_default=True)
@click.option(
    "--probe",
    type=click.IntRange(min=2),
    default=20,
    show_default=True,
    help="Mini-batches without the cache, then as many with it, at every epoch's start.",
)
@click.option(
    "--eligible-above",
    type=click.FloatRange(min=1.0),
    default=1.5,
    show_default=True,
    help="A job's benefit must exceed this for its importance to count.",
)
@click.option(
    "--correlation",
    type=click.FloatRange(min=-1.0, max=1.0),
    default=0.3,
    show_default=True,
    help="How alike the two jobs find samples hard (their difficulties, in log space).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("icachejobs")
@json_option()
@root_option
def command(
    cache_fracs: str,
    n: int,
    epochs: int,
    batch_size: int,
    probe: int,
    eligible_above: float,
    correlation: float,
    seed: int,
    progress: bool,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Two jobs, one cache: LRU, job A's importance, job B's, and iCACHE's adjusted
    importance; per-job modeled epoch time and hit ratio (simulated)."""
    from hotset.bench.icache_jobs import DEFAULT_SETUP, run

    setup = replace(
        DEFAULT_SETUP,
        n=n,
        epochs=epochs,
        batch_size=batch_size,
        probe=probe,
        threshold=eligible_above,
        correlation=correlation,
        seed=seed,
    )
    result = run(
        setup=setup,
        cache_fracs=parse_floats(cache_fracs, option="--cache-fracs"),
        progress=progress,
    )
    finish(name, result, root, as_json)
