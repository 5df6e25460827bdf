"""``hotset bench ranks``: private vs pooled caches with real ranks on this machine."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.ranks import DEFAULT_STORE
from hotset.cli.bench import finish, root_option
from hotset.cli.bench_job_store import job_store, job_store_options
from hotset.cli.json_option import json_option
from hotset.cli.store_option import store_line


@click.command("ranks")
@click.option("--worlds", default="1,2", show_default=True, help="World sizes (ranks).")
@click.option("--systems", default="pytorch,lru,minio,shade", show_default=True)
@click.option("--cache-fracs", default="0.1,0.2", show_default=True, help="Per rank.")
@click.option("--n", "n", type=click.IntRange(min=64), default=2000, show_default=True)
@click.option("--epochs", type=click.IntRange(min=2), default=3, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True)
@job_store_options(DEFAULT_STORE)
@click.option("--progress/--no-progress", default=True, show_default=True)
@json_option()
@root_option
def command(
    worlds: str,
    systems: str,
    cache_fracs: str,
    n: int,
    epochs: int,
    batch_size: int,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    progress: bool,
    as_json: bool,
    root: Path,
) -> None:
    """Exact hits, pool hits and storage reads per epoch, private vs pooled, real ranks."""
    from hotset.bench.ranks import run
    from hotset.bench.workloads import parse_floats, parse_ints
    from hotset.systems.registry import split_systems

    store = job_store(DEFAULT_STORE, store_preset, latency_ms, bandwidth_mb_s, concurrency)
    result = run(
        worlds=parse_ints(worlds, option="--worlds"),
        systems=split_systems(systems),
        cache_fracs=parse_floats(cache_fracs, option="--cache-fracs"),
        n=n,
        epochs=epochs,
        batch_size=batch_size,
        store=store,
        progress=progress,
    )
    if not as_json:
        click.echo(store_line(store))
    finish("ranks", result, root, as_json)
