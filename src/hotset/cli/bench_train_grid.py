"""``hotset bench traingrid``: systems against a reference over cache x chunk size."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.workloads import DEFAULT_DATA_DIR, parse_floats, parse_ints
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import simulated_store, simulated_store_options, store_line
from hotset.errors import HotsetError
from hotset.systems.registry import split_systems


@click.command("traingrid")
@click.option(
    "--systems",
    default="quiver,scout",
    show_default=True,
    help="Comma list (NAME[option=value,...] too); the first is the reference of each cell.",
)
@click.option("--cache-fracs", default="0.05,0.1,0.2,0.4", show_default=True)
@click.option("--chunk-sizes", default="16,64,256", show_default=True)
@click.option("--seeds", default="0,1,2", show_default=True)
@click.option("--epochs", type=click.IntRange(min=1), default=15, show_default=True)
@click.option("--compute-ms", type=click.FloatRange(min=0), default=20.0, show_default=True)
@click.option(
    "--target-share",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=0.99,
    show_default=True,
    help="The share of pytorch's final accuracy a run must reach (the audit's 0.99).",
)
@click.option(
    "--workload",
    default="synth",
    show_default=True,
    type=click.Choice(["synth", "synth-noisy", "digits"]),
)
@click.option("--synth-n", type=click.IntRange(min=200), default=5_000, show_default=True)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA_DIR,
    show_default=True,
)
@simulated_store_options
@name_option("traingrid")
@json_option()
@root_option
def command(
    systems: str,
    cache_fracs: str,
    chunk_sizes: str,
    seeds: str,
    epochs: int,
    compute_ms: float,
    target_share: float,
    workload: str,
    synth_n: int,
    data_dir: Path,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Per cell of cache x chunk size: each system's epoch time, time to the pytorch
    baseline's accuracy and bytes read over bytes trained, beside the first system's
    (simulated; mean over seeds)."""
    from hotset.bench.train_grid import run

    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    fracs = parse_floats(cache_fracs, option="--cache-fracs")
    if any(not 0 < f <= 1 for f in fracs):
        raise HotsetError(f"--cache-fracs: each must be in (0, 1], got {cache_fracs!r}")
    chunks = parse_ints(chunk_sizes, option="--chunk-sizes")
    if any(c < 1 for c in chunks):
        raise HotsetError(f"--chunk-sizes: each must be >= 1, got {chunk_sizes!r}")
    seed_values = parse_ints(seeds, option="--seeds")
    if any(s < 0 for s in seed_values):
        raise HotsetError(f"--seeds: seeds must be non-negative, got {seeds!r}")
    names = split_systems(systems)
    if "pytorch" in names:
        raise HotsetError("--systems: pytorch is the baseline, trained once per seed; leave it out")
    result = run(
        data_dir=data_dir,
        systems=names,
        cache_fracs=fracs,
        chunk_sizes=chunks,
        seeds=seed_values,
        epochs=epochs,
        compute_ms=compute_ms,
        workload=workload,
        synth_n=synth_n,
        store=store,
        target_share=target_share,
    )
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
