"""``hotset bench matrix``: every system x store preset x cache size x sample size."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.matrix import MatrixOptions
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.typed_options import options_from


@click.command("matrix")
@options_from(MatrixOptions)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("matrix")
@json_option()
@root_option
def command(opts: MatrixOptions, progress: bool, name: str, as_json: bool, root: Path) -> None:
    """Measured samples/s vs torch and no-I/O, bytes, hits and coverage, with simulated
    accuracy and modeled time to accuracy, for every system on every preset."""
    from hotset.bench.matrix import run
    from hotset.bench.matrix_plot import plot
    from hotset.bench.results import RESULTS_DIR

    result = run(opts, progress=progress)
    figure = root / RESULTS_DIR / f"{name}.png"
    figure.parent.mkdir(parents=True, exist_ok=True)
    if result["table"]:
        plot(result, figure)
    finish(name, result, root, as_json)
