"""``hotset bench multijob``: independent jobs on one data set, private vs shared cache."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.multijob import DEFAULT_STORE
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.bench_job_store import job_store, job_store_options
from hotset.cli.json_option import json_option
from hotset.cli.store_option import store_line


@click.command("multijob")
@click.option("--jobs", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--systems", default="pytorch,minio,quiver", show_default=True)
@click.option(
    "--cache-frac",
    "cache_fracs",
    default="0.1,0.2",
    show_default=True,
    help="Comma list: each job's private cache, or the one shared namespace, as a "
    "share of the data set's bytes.",
)
@click.option("--n", "n", type=click.IntRange(min=64), default=3000, show_default=True)
@click.option("--epochs", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True)
@job_store_options(DEFAULT_STORE)
@click.option(
    "--stagger",
    default="epoch",
    show_default=True,
    help="Beside each lockstep row, a row whose jobs start apart: 'epoch' (job j of J "
    "starts j/J of a lockstep epoch after job 0), '<F>epoch' (spread over F epochs), "
    "'<S>s' (S seconds between consecutive starts), or 'none' (lockstep rows only).",
)
@click.option(
    "--workers", type=click.IntRange(min=0), default=0, show_default=True, help="Per job."
)
@click.option(
    "--step-ms",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="The model's step per batch, a fixed wait in each job (0: the jobs only read).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Job i uses seed + i.")
@click.option(
    "--chunk-size",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Samples per chunk file of the packed data set.",
)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("multijob")
@json_option()
@root_option
def command(
    jobs: int,
    systems: str,
    cache_fracs: str,
    n: int,
    epochs: int,
    batch_size: int,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    stagger: str,
    workers: int,
    step_ms: float,
    seed: int,
    chunk_size: int,
    progress: bool,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Storage reads per epoch across K jobs, private caches vs one shared namespace,
    jobs started together and staggered."""
    from hotset.bench.multijob import run
    from hotset.bench.stagger import parse_stagger
    from hotset.bench.workloads import parse_floats
    from hotset.systems.registry import split_systems

    store = job_store(DEFAULT_STORE, store_preset, latency_ms, bandwidth_mb_s, concurrency)
    result = run(
        jobs=jobs,
        systems=split_systems(systems),
        cache_fracs=parse_floats(cache_fracs, option="--cache-frac"),
        n=n,
        epochs=epochs,
        batch_size=batch_size,
        store=store,
        workers=workers,
        seed=seed,
        progress=progress,
        chunk_size=chunk_size,
        stagger=parse_stagger(stagger),
        step_ms=step_ms,
    )
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
