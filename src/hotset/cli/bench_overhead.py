"""``hotset bench overhead``: decisions/s, loader µs per sample, cache bandwidths."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.cli.bench import finish, root_option
from hotset.cli.json_option import json_option


@click.command("overhead")
@click.option("--accesses", type=click.IntRange(min=1000), default=300_000, show_default=True)
@click.option("--loader-n", type=click.IntRange(min=100), default=2000, show_default=True)
@click.option("--cache-count", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--cache-size", type=click.IntRange(min=1), default=100_000, show_default=True)
@click.option("--cache-rounds", type=click.IntRange(min=1), default=20, show_default=True)
@json_option()
@root_option
def command(
    accesses: int,
    loader_n: int,
    cache_count: int,
    cache_size: int,
    cache_rounds: int,
    as_json: bool,
    root: Path,
) -> None:
    """What hotset itself costs: policy, loader, shared memory, Redis."""
    from hotset.bench.overhead import run

    result = run(
        accesses=accesses,
        loader_n=loader_n,
        cache_count=cache_count,
        cache_size=cache_size,
        cache_rounds=cache_rounds,
    )
    finish("overhead", result, root, as_json)
