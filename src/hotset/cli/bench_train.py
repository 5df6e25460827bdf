"""``hotset bench train``: accuracy and time-to-accuracy per system, over seeds."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.workloads import DEFAULT_DATA_DIR, PACK_CHUNK_SIZE, parse_ints, parse_list
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import simulated_store, simulated_store_options, store_line
from hotset.errors import HotsetError
from hotset.systems.registry import split_systems

#: the live simulator's models (hotset.sim.models.MODEL_NAMES; named here so the CLI loads
#: without torch)
MODELS = ("auto", "cnn", "mlp", "resnet", "resnet18")


@click.command("train")
@click.option(
    "--workloads",
    default="digits",
    show_default=True,
    help="Comma list of synth, digits, imagenet-like, synth-sorted (label-sorted ids, "
    "packed shuffled), synth-sorted-unshuffled (packed in id order), synth-noisy (20%% "
    "labels flipped, half the samples easy: where importance sampling should pay).",
)
@click.option(
    "--systems",
    default="pytorch,lru,minio,shade",
    show_default=True,
    help="Comma list; NAME[option=value,...] compares option settings (one row each).",
)
@click.option("--seeds", default="0,1,2", show_default=True)
@click.option("--epochs", type=click.IntRange(min=1), default=15, show_default=True)
@click.option(
    "--cache-frac",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=0.2,
    show_default=True,
)
@click.option("--compute-ms", type=click.FloatRange(min=0), default=20.0, show_default=True)
@click.option(
    "--measure-compute",
    is_flag=True,
    help="Charge each step its measured time on --device instead of --compute-ms.",
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=1),
    default=PACK_CHUNK_SIZE,
    show_default=True,
    help="Samples per chunk of the packed set the chunk systems read.",
)
@click.option(
    "--model",
    type=click.Choice(MODELS),
    default="auto",
    show_default=True,
    help="The live simulator's model (resnet18: CIFAR-style ResNet-18).",
)
@click.option("--device", default="cpu", show_default=True, help="Torch device to train on.")
@click.option("--batch-size", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=0.05, show_default=True)
@click.option(
    "--identification/--no-identification",
    default=True,
    show_default=True,
    help="Measure top1_precision with a forward pass over every sample each epoch.",
)
@click.option("--synth-n", type=click.IntRange(min=200), default=20_000, show_default=True)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA_DIR,
    show_default=True,
)
@simulated_store_options
@name_option("train")
@json_option()
@root_option
def command(
    workloads: str,
    systems: str,
    seeds: str,
    epochs: int,
    cache_frac: float,
    compute_ms: float,
    measure_compute: bool,
    chunk_size: int,
    model: str,
    device: str,
    batch_size: int,
    lr: float,
    identification: bool,
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
    """Time to the pytorch baseline's accuracy, and final accuracy (mean ± std over seeds)."""
    from hotset.bench.train import run

    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    seed_values = parse_ints(seeds, option="--seeds")
    if any(s < 0 for s in seed_values):
        raise HotsetError(f"--seeds: seeds must be non-negative, got {seeds!r}")
    result = run(
        data_dir=data_dir,
        workloads=parse_list(workloads, option="--workloads"),
        systems=split_systems(systems),
        seeds=seed_values,
        epochs=epochs,
        cache_frac=cache_frac,
        compute_ms=compute_ms,
        synth_n=synth_n,
        store=store,
        chunk_size=chunk_size,
        model=model,
        device=device,
        batch_size=batch_size,
        lr=lr,
        measure_compute=measure_compute,
        identification=identification,
    )
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
