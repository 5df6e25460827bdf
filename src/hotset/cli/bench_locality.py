"""``hotset bench locality``: chunk locality of brand's, quiver's and a uniform order."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.workloads import DEFAULT_DATA_DIR, parse_floats, parse_ints
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.systems.registry import split_systems


@click.command("locality")
@click.option("--systems", default=None, help="Comma list (default: pytorch, brand, quiver).")
@click.option("--n", "n", type=click.IntRange(min=100), default=2000, show_default=True)
@click.option("--chunk-sizes", default="16,64", show_default=True)
@click.option("--cache-fracs", default="0.1,0.2", show_default=True)
@click.option("--epochs", type=click.IntRange(min=2), default=4, show_default=True)
@click.option(
    "--seeds",
    default="1,2,3",
    show_default=True,
    help="Runs averaged per row (0, the pack's shuffle seed, makes epoch 0 the pack order).",
)
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA_DIR,
    show_default=True,
    help="Where the two data sets are generated once and reused (and re-packed).",
)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("locality")
@json_option()
@root_option
def command(
    systems: str | None,
    n: int,
    chunk_sizes: str,
    cache_fracs: str,
    epochs: int,
    seeds: str,
    batch_size: int,
    data_dir: Path,
    progress: bool,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Same-chunk adjacency, chunk-mate spread and consecutive-epoch rank correlation of
    each system's delivered order, against a uniform permutation (simulated decisions)."""
    from hotset.bench.locality import DEFAULT_SYSTEMS, run

    result = run(
        data_dir=data_dir,
        systems=split_systems(systems) if systems else DEFAULT_SYSTEMS,
        n=n,
        chunk_sizes=parse_ints(chunk_sizes, option="--chunk-sizes"),
        cache_fracs=parse_floats(cache_fracs, option="--cache-fracs"),
        epochs=epochs,
        seeds=parse_ints(seeds, option="--seeds"),
        batch_size=batch_size,
        progress=progress,
    )
    finish(name, result, root, as_json)
