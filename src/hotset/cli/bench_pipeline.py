"""``hotset bench pipeline``: a real model step fed by each data path, over a store model.

Defaults follow the device: on a GPU the issue's settings (10,000 JPEGs of 500x375,
ResNet-50 where torchvision imports, batches of 256, 14 workers, 3 epochs); on a CPU
a run of a few minutes (256 JPEGs, the small convnet, batches of 32, 2 workers, 2
epochs). Every one can be given; ``benchmarks/gpu/pipeline.sh`` is the GPU command.
"""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.pipeline_options import DEFAULT_STORE, PipelineOptions
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import store_line, store_option
from hotset.cli.typed_options import options_from


@click.command("pipeline")
@store_option  # above the options: --store is listed first
@options_from(PipelineOptions)
@name_option("pipeline")
@json_option()
@root_option
def command(
    store_preset: str | None, opts: PipelineOptions, name: str, as_json: bool, root: Path
) -> None:
    """Samples/s of a real training step: model-only, no-io, torch and hotset's systems
    augmenting in the workers or on the device; stall, CPU per sample, reads."""
    from hotset.bench.pipeline import run
    from hotset.storage.presets import resolve_store

    store = resolve_store(
        store_preset or DEFAULT_STORE, latency_ms=None, bandwidth_mb_s=None, max_concurrency=None
    )
    result = run(opts, store=store)
    result["store"] = store.as_dict()
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
