"""``hotset bench pipeline``: a real model step fed by each data path, over a store model.

Defaults follow the device: on a GPU the issue's settings (10,000 JPEGs of 500x375,
ResNet-50 where torchvision imports, batches of 256, 14 workers, 3 epochs); on a CPU
a run of a few minutes (256 JPEGs, the small convnet, batches of 32, 2 workers, 2
epochs). Every one can be given; ``benchmarks/gpu/pipeline.sh`` is the GPU command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import store_line, store_option
from hotset.errors import HotsetError

#: the store model when --store is not given: the issue's
DEFAULT_STORE = "cloud-nas"
#: per device kind: n, batch size, workers, epochs, model, classes
DEFAULTS: dict[str, dict[str, Any]] = {
    "cuda": {"n": 10_000, "batch_size": 256, "workers": 14, "epochs": 3, "model": "auto",
             "classes": 1000},
    "cpu": {"n": 256, "batch_size": 32, "workers": 2, "epochs": 2, "model": "small",
            "classes": 10},
}  # fmt: skip


def _image_size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` (``500x375``) as (width, height)."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise HotsetError(
            f"--image-size must be WIDTHxHEIGHT such as 500x375, got {text!r}"
        ) from None
    return width, height


@click.command("pipeline")
@store_option
@click.option(
    "--n",
    "n",
    type=click.IntRange(min=1),
    default=None,
    help="JPEGs generated [default: 10000 on a GPU, 256 on a CPU].",
)
@click.option(
    "--image-size",
    default="500x375",
    show_default=True,
    help="WIDTHxHEIGHT of the generated JPEGs (a --portrait share turned on its side).",
)
@click.option("--portrait", type=click.FloatRange(0, 1), default=0.2, show_default=True)
@click.option(
    "--quality",
    type=click.IntRange(1, 95),
    default=94,
    show_default=True,
    help="JPEG quality: 94 makes 500x375 photos of about 105 kB.",
)
@click.option(
    "--classes",
    type=click.IntRange(min=1),
    default=None,
    help="Labels [default: 1000 on a GPU, 10 on a CPU].",
)
@click.option("--crop", "crop_size", type=click.IntRange(min=1), default=224, show_default=True)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=None,
    help="[default: 256 on a GPU, 32 on a CPU]",
)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=None,
    help="DataLoader workers of every row [default: 14 on a GPU, 2 on a CPU].",
)
@click.option(
    "--epochs", type=click.IntRange(min=1), default=None, help="[default: 3 on a GPU, 2 on a CPU]"
)
@click.option(
    "--cache-frac", type=click.FloatRange(0, 1, min_open=True), default=0.2, show_default=True
)
@click.option(
    "--systems",
    default="pytorch,quiver,scout",
    show_default=True,
    help="Comma list of hotset systems; NAME[option=value,...] sets options.",
)
@click.option(
    "--paths",
    default="worker,device",
    show_default=True,
    help="Where hotset's rows augment: worker (uint8 hand-over), device, or both.",
)
@click.option(
    "--model",
    type=click.Choice(["auto", "resnet50", "small"]),
    default=None,
    help="auto: torchvision's ResNet-50 where it imports, else the small convnet "
    "[default: auto on a GPU, small on a CPU].",
)
@click.option(
    "--device",
    default="auto",
    show_default=True,
    help="auto (cuda where available), cpu, cuda or cuda:N.",
)
@click.option("--io-threads", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Generate the JPEGs here, or reuse the set made here with "
    "the same options [default: a temporary directory].",
)
@name_option("pipeline")
@json_option()
@root_option
def command(
    store_preset: str | None, n: int | None, image_size: str, portrait: float, quality: int,
    classes: int | None, crop_size: int, batch_size: int | None, workers: int | None,
    epochs: int | None, cache_frac: float, systems: str, paths: str, model: str | None,
    device: str, io_threads: int, seed: int, data_dir: Path | None, name: str, as_json: bool,
    root: Path,
) -> None:  # fmt: skip
    """Samples/s of a real training step: model-only, no-io, torch and hotset's systems
    augmenting in the workers or on the device; stall, CPU per sample, reads."""
    from hotset.bench.pipeline import resolve_device, run
    from hotset.data.photos import PhotoConfig
    from hotset.storage.presets import resolve_store
    from hotset.systems.registry import split_systems

    width, height = _image_size(image_size)
    kind = resolve_device(device).type
    given = {"n": n, "batch_size": batch_size, "workers": workers, "epochs": epochs,
             "model": model, "classes": classes}  # fmt: skip
    opts: dict[str, Any] = {
        k: v if v is not None else DEFAULTS.get(kind, DEFAULTS["cpu"])[k] for k, v in given.items()
    }
    photos = PhotoConfig(
        n=opts["n"], width=width, height=height, portrait=portrait, classes=opts["classes"],
        quality=quality, seed=seed,
    )  # fmt: skip
    store = resolve_store(
        store_preset or DEFAULT_STORE, latency_ms=None, bandwidth_mb_s=None, max_concurrency=None
    )
    result = run(
        photos=photos, store=store, systems=tuple(split_systems(systems)),
        paths=tuple(p.strip() for p in paths.split(",") if p.strip()), model=opts["model"],
        device=device, size=crop_size, batch_size=opts["batch_size"], workers=opts["workers"],
        epochs=opts["epochs"], cache_frac=cache_frac, seed=seed, io_threads=io_threads,
        data_dir=data_dir,
    )  # fmt: skip
    result["store"] = store.as_dict()
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
