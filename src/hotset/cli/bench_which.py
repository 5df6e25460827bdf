"""``hotset bench which``: "which system should I use?", from the committed matrix."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.results import RESULTS_DIR


@click.command("which")
@click.option(
    "--matrix",
    "matrix_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=RESULTS_DIR / "matrix.json",
    show_default=True,
    help="A `hotset bench matrix` result file.",
)
@click.option("--cache-frac", type=float, default=0.2, show_default=True)
@click.option(
    "--write",
    "write_to",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Rewrite the table between the markers of this file (README.md) instead of printing.",
)
def command(matrix_path: Path, cache_frac: float, write_to: Path | None) -> None:
    """Print (or --write) the README's "which system" table, derived from the matrix."""
    from hotset.bench.which import load, render, replace_block
    from hotset.errors import HotsetError
    from hotset.fsutil import atomic_write

    try:
        block = render(load(matrix_path), frac=cache_frac)
        if write_to is None:
            click.echo("\n".join(block))
            return
        atomic_write(write_to, replace_block(write_to.read_text(), block))
    except (HotsetError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote the table into {write_to}")
