"""``hotset bench hitratio``: every system × cache size, with Belady's bound."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.workloads import DEFAULT_DATA_DIR, parse_floats, parse_list
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import simulated_store, simulated_store_options, store_line
from hotset.errors import HotsetError
from hotset.systems.registry import split_systems


@click.command("hitratio")
@click.option("--workloads", default="synth,digits", show_default=True)
@click.option(
    "--systems", default=None, help="Comma list (default: baselines, sh_lru, shade, emul_quiv)."
)
@click.option("--fracs", default="0.1,0.2,0.4,0.6,0.8", show_default=True)
@click.option("--epochs", type=click.IntRange(min=2), default=10, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--synth-n", type=click.IntRange(min=200), default=20_000, show_default=True)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA_DIR,
    show_default=True,
    help="Where the workloads are generated once and reused.",
)
@simulated_store_options
@name_option("hitratio")
@json_option()
@root_option
def command(
    workloads: str,
    systems: str | None,
    fracs: str,
    epochs: int,
    seed: int,
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
    """Exact hits, substitutions and storage reads per system and cache size."""
    from hotset.bench.hitratio import DEFAULT_SYSTEMS, run

    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    frac_values = parse_floats(fracs, option="--fracs")
    bad = [f for f in frac_values if not 0 < f <= 1]
    if bad:
        raise HotsetError(f"--fracs: each fraction must be in (0, 1], got {bad[0]}")
    figure = root / "benchmarks" / "results" / f"{name}.png"
    figure.parent.mkdir(parents=True, exist_ok=True)
    result = run(
        data_dir=data_dir,
        workloads=parse_list(workloads, option="--workloads"),
        systems=split_systems(systems) if systems else DEFAULT_SYSTEMS,
        fracs=frac_values,
        epochs=epochs,
        seed=seed,
        synth_n=synth_n,
        figure=figure,
        store=store,
    )
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
