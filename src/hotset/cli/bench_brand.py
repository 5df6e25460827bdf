"""``hotset bench brand``: Brand vs PyTorch and no-I/O in the real loader, and a chunk sweep."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.cli.bench import finish, root_option


@click.command("brand")
@click.option("--latency-ms", "latencies", default="2,10", show_default=True)
@click.option("--cache-fracs", default="0.1,0.2", show_default=True)
@click.option("--chunk-sizes", default="8,16,32,64,128", show_default=True)
@click.option("--n", "n", type=click.IntRange(min=256), default=4000, show_default=True)
@click.option("--epochs", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--workers", type=click.IntRange(min=0), default=4, show_default=True)
@click.option("--progress/--no-progress", default=True, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@root_option
def command(
    latencies: str,
    cache_fracs: str,
    chunk_sizes: str,
    n: int,
    epochs: int,
    workers: int,
    progress: bool,
    as_json: bool,
    root: Path,
) -> None:
    """Samples/s vs torch and no-I/O, hits, substitutions and wasted reads, measured."""
    from hotset.bench.brand import run
    from hotset.bench.workloads import parse_floats, parse_ints

    result = run(
        latencies=parse_floats(latencies, option="--latency-ms"),
        cache_fracs=parse_floats(cache_fracs, option="--cache-fracs"),
        chunk_sizes=parse_ints(chunk_sizes, option="--chunk-sizes"),
        n=n,
        epochs=epochs,
        workers=workers,
        progress=progress,
    )
    finish("brand", result, root, as_json)
