"""``hotset bench matrix``: every system x store preset x cache size x sample size."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.matrix import (
    DEFAULT_FRACS,
    DEFAULT_PRESETS,
    DEFAULT_SYSTEMS,
    DEFAULT_WORKLOADS,
)
from hotset.bench.workloads import DEFAULT_DATA_DIR
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option


def _csv(values: tuple[object, ...]) -> str:
    return ",".join(str(v) for v in values)


@click.command("matrix")
@click.option(
    "--stores",
    "presets",
    default=_csv(DEFAULT_PRESETS),
    show_default=True,
    help="Comma list of store presets (see `hotset stores`).",
)
@click.option("--workloads", default=_csv(DEFAULT_WORKLOADS), show_default=True)
@click.option("--cache-fracs", default=_csv(DEFAULT_FRACS), show_default=True)
@click.option(
    "--systems",
    default=_csv(DEFAULT_SYSTEMS),
    show_default=True,
    help="Comma list; NAME[option=value,...] sets a system's options.",
)
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True)
@click.option(
    "--epochs",
    type=click.IntRange(min=2),
    default=3,
    show_default=True,
    help="Measured epochs per row (the first is cold).",
)
@click.option(
    "--n",
    "n",
    type=click.IntRange(min=200),
    default=1200,
    show_default=True,
    help="Samples of each workload in the measured half.",
)
@click.option(
    "--sim-n",
    type=click.IntRange(min=200),
    default=2000,
    show_default=True,
    help="Samples of each workload the simulator trains on.",
)
@click.option("--workers", type=click.IntRange(min=0), default=4, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True)
@click.option(
    "--step-ms",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    help="The accelerator's step per batch, modeled as a fixed wait.",
)
@click.option("--seeds", default="0,1,2", show_default=True, help="Simulated training seeds.")
@click.option("--sim-epochs", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA_DIR,
    show_default=True,
)
@click.option(
    "--halves",
    default="measured,simulated",
    show_default=True,
    help="Run only the measured (real clock) or the simulated (accuracy) half.",
)
@click.option(
    "--measured-from",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Take the measured half from an earlier matrix result.",
)
@click.option(
    "--accuracy-from",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Take the simulated half from an earlier matrix result.",
)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("matrix")
@json_option()
@root_option
def command(
    presets: str,
    workloads: str,
    cache_fracs: str,
    systems: str,
    repeats: int,
    epochs: int,
    n: int,
    sim_n: int,
    workers: int,
    batch_size: int,
    step_ms: float,
    seeds: str,
    sim_epochs: int,
    data_dir: Path,
    halves: str,
    measured_from: Path | None,
    accuracy_from: Path | None,
    progress: bool,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Measured samples/s vs torch and no-I/O, bytes, hits and coverage, with simulated
    accuracy and modeled time to accuracy, for every system on every preset."""
    from hotset.bench.matrix import run
    from hotset.bench.matrix_plot import plot
    from hotset.bench.results import RESULTS_DIR
    from hotset.bench.workloads import parse_floats, parse_ints, parse_list
    from hotset.systems.registry import split_systems

    result = run(
        data_dir=data_dir,
        presets=parse_list(presets, option="--stores"),
        workloads=parse_list(workloads, option="--workloads"),
        fracs=parse_floats(cache_fracs, option="--cache-fracs"),
        systems=split_systems(systems),  # NAME[a=1,b=2] keeps its commas
        repeats=repeats,
        epochs=epochs,
        workers=workers,
        batch_size=batch_size,
        step_ms=step_ms,
        n=n,
        sim_n=sim_n,
        seeds=parse_ints(seeds, option="--seeds"),
        sim_epochs=sim_epochs,
        halves=parse_list(halves, option="--halves"),
        measured_from=measured_from,
        accuracy_from=accuracy_from,
        progress=progress,
    )
    figure = root / RESULTS_DIR / f"{name}.png"
    figure.parent.mkdir(parents=True, exist_ok=True)
    if result["table"]:
        plot(result, figure)
    finish(name, result, root, as_json)
