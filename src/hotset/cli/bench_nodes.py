"""``hotset bench nodes``: private vs pooled caches over several nodes (simulated)."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.cli.bench import finish, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import simulated_store, simulated_store_options, store_line


@click.command("nodes")
@click.option("--systems", default="pytorch,lru,minio,shade", show_default=True)
@click.option("--nodes", "nodes", default="1,2,4", show_default=True)
@click.option("--cache-fracs", default="0.1,0.2", show_default=True, help="Per node.")
@click.option("--n", "n", type=click.IntRange(min=16), default=20_000, show_default=True)
@click.option("--epochs", type=click.IntRange(min=2), default=4, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=128, show_default=True)
@click.option(
    "--imagenet-nodes",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Also ImageNet-1k sizes on this many nodes (0: skip; slow at 64).",
)
@click.option("--imagenet-frac", type=float, default=0.01, show_default=True, help="Per node.")
@simulated_store_options
@click.option("--progress/--no-progress", default=True, show_default=True)
@json_option()
@root_option
def command(
    systems: str,
    nodes: str,
    cache_fracs: str,
    n: int,
    epochs: int,
    batch_size: int,
    imagenet_nodes: int,
    imagenet_frac: float,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    progress: bool,
    as_json: bool,
    root: Path,
) -> None:
    """Exact hits, storage reads and remote traffic per epoch, private vs pooled."""
    from hotset.bench.nodes import run
    from hotset.bench.workloads import parse_floats, parse_ints
    from hotset.systems.registry import get_spec, parse_system, split_systems

    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    # systems may hold options with commas (shade[a=1,b=2]): split_systems knows brackets
    names = split_systems(systems)
    for spec in names:
        get_spec(parse_system(spec)[0])  # an unknown name fails before any work
    result = run(
        systems=names,
        nodes=parse_ints(nodes, option="--nodes"),
        cache_fracs=parse_floats(cache_fracs, option="--cache-fracs"),
        n=n,
        epochs=epochs,
        batch_size=batch_size,
        imagenet_nodes=imagenet_nodes,
        imagenet_frac=imagenet_frac,
        store=store,
        progress=progress,
    )
    if not as_json:
        click.echo(store_line(store))
    finish("nodes", result, root, as_json)
