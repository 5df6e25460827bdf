"""``hotset bench icachejobs``: iCACHE's multi-job experiment (Fig. 14), simulated."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.icache_jobs import IcacheJobsOptions
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.typed_options import options_from


@click.command("icachejobs")
@options_from(IcacheJobsOptions)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("icachejobs")
@json_option()
@root_option
def command(opts: IcacheJobsOptions, progress: bool, name: str, as_json: bool, root: Path) -> None:
    """Two jobs, one cache: LRU, job A's importance, job B's, and iCACHE's adjusted
    importance; per-job modeled epoch time and hit ratio (simulated)."""
    from hotset.bench.icache_jobs import run

    finish(name, run(opts, progress=progress), root, as_json)
