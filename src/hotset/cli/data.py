"""``hotset data``: make, import, verify, digest and pack datasets."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from hotset.data.manifest import Manifest
    from hotset.storage.base import Store


@click.group("data")
def data() -> None:
    """Make, import, verify and pack datasets (files plus manifest.csv and dataset.json)."""


@data.command("synth")
@click.option("--out", required=True, type=click.Path(), help="Dataset directory to create.")
@click.option("--n", "n", default=50_000, show_default=True, type=int, help="Number of samples.")
@click.option("--image-size", default=32, show_default=True, type=int, help="Height = width.")
@click.option("--classes", default=10, show_default=True, type=int, help="Number of classes.")
@click.option(
    "--noise", default=0.1, show_default=True, type=float, help="Fraction of flipped labels."
)
@click.option(
    "--easy",
    default=0.0,
    show_default=True,
    type=float,
    help="Share of samples made easy (difficulty from Beta(1, 12)): a long tail of easy ones.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Same seed, same bytes.")
@click.option(
    "--draw",
    default=0,
    show_default=True,
    type=int,
    help="An independent draw of samples from the seed's classes: with --noise 0, a clean "
    "test set of the task draw 0 trains on.",
)
@click.option(
    "--format", default="png", show_default=True, type=click.Choice(["png", "jpeg", "npy"])
)
@click.option("--channels", default=3, show_default=True, type=click.Choice(["1", "3"]))
@click.option(
    "--sizes",
    default="small",
    show_default=True,
    type=click.Choice(["small", "imagenet"]),
    help="imagenet: pad each sample to a seeded log-normal size with mean 110 kB "
    "(median ~92 kB, sigma 0.6 of log-bytes), where the decoder skips it.",
)
@click.option("--force", is_flag=True, help="Replace a non-empty --out.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def synth(out: str, force: bool, quiet: bool, **config: Any) -> None:
    """A learnable synthetic image dataset with easy, hard and mislabeled samples.

    Per-sample difficulty, confuser class, shift and label flips are saved in
    synth_truth.npz beside the manifest. Same arguments give the same bytes.
    """
    from hotset.data.synth import SynthConfig, make_synth

    # every other option is a SynthConfig field of the same name (channels as a choice)
    cfg = SynthConfig(**{**config, "channels": int(config["channels"])})
    start = time.perf_counter()
    manifest = make_synth(out, cfg, force=force, progress=not quiet)
    click.echo(
        f"wrote {len(manifest)} samples, {manifest.total_bytes} bytes to {out} "
        f"in {time.perf_counter() - start:.1f} s"
    )


@data.command("digits")
@click.option("--out", required=True, type=click.Path(), help="Dataset directory to create.")
@click.option(
    "--format", "fmt", default="png", show_default=True, type=click.Choice(["png", "jpeg", "npy"])
)
@click.option(
    "--val",
    type=float,
    default=0.1,
    show_default=True,
    help="Share of each class held out in OUT/split/val (0: no split).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the hold-out.")
@click.option("--force", is_flag=True, help="Replace a non-empty --out.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def digits(out: str, fmt: str, val: float, seed: int, force: bool, quiet: bool) -> None:
    """scikit-learn's bundled 8x8 digits: 1,797 grayscale images, labels 0..9 (no download).

    OUT holds all of them; OUT/split/train and OUT/split/val a stratified
    hold-out of them (hard links, no second copy), unless --val 0.
    """
    from hotset.data.digits import SPLIT_DIR, make_digits
    from hotset.data.manifest import Manifest

    manifest = make_digits(out, fmt=fmt, force=force, progress=not quiet, val=val, seed=seed)
    click.echo(f"wrote {len(manifest)} samples, {manifest.total_bytes} bytes to {out}")
    if val != 0:
        split = f"{out.rstrip('/')}/{SPLIT_DIR}"
        n_train, n_val = (len(Manifest.load(f"{split}/{part}")) for part in ("train", "val"))
        click.echo(f"{split}/train: {n_train} samples; {split}/val: {n_val} samples")


@data.command("import")
@click.argument("root", type=click.Path())
@click.option(
    "--out",
    type=click.Path(),
    default=None,
    help="Directory or .csv path for the manifest (default: ROOT). Keys stay relative to ROOT, "
    "which dataset.json records as 'root'. For a split tree: a directory, one folder per split.",
)
@click.option(
    "--layout",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "imagefolder", "flat", "splits"]),
    help="imagefolder: one sub-folder per class (labels by sorted name); flat: all label -1; "
    "splits: ROOT/{train,val,...}/CLASS/*, one data set per split (auto picks it when ROOT "
    "holds only folders named train, val, valid, validation or test).",
)
@click.option(
    "--split",
    "splits",
    multiple=True,
    help="With a split tree: import only this split (repeatable; default: all). Labels are "
    "numbered over every split's classes either way.",
)
@click.option("--force", is_flag=True, help="Replace an existing manifest.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def import_(
    root: str, out: str | None, layout: str, splits: tuple[str, ...], force: bool, quiet: bool
) -> None:
    """Write a manifest for a folder of .png/.jpg/.jpeg/.npy files.

    One sub-folder per class (ImageFolder; labels 0.. by sorted folder name) or
    a flat folder (label -1). A split tree (ROOT/train/CLASS/*, ROOT/val/CLASS/*,
    as ImageNet's) becomes one data set per split, in OUT/SPLIT (default
    ROOT/SPLIT), with classes numbered over all splits so labels agree.
    Sizes and xxh3 hashes are computed from the files. Symbolic links that lead
    outside ROOT are skipped, counted and named.

    ROOT may be a URL (s3://bucket/prefix, endpoint and credentials from the
    standard AWS environment): the images are listed and read from the store,
    and the manifest is written beside them, or into --out with the URL as
    its root (for a bucket you may read but not write).
    """
    import warnings

    from hotset.data.importer import split_names
    from hotset.data.opener import is_url
    from hotset.errors import HotsetError

    if is_url(root):
        click.echo(_import_url(root, out, layout, splits, force, quiet))
        return
    by_split = layout == "splits" or (layout == "auto" and bool(split_names(root)))
    if splits and not by_split:
        raise HotsetError(
            f"--split {splits[0]} needs a split tree (ROOT/train/CLASS/..., ROOT/val/...); "
            + (f"{root!r} is none" if layout == "auto" else f"--layout {layout} is another")
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        if by_split:
            lines = _import_splits(root, out, splits, force, quiet)
        else:
            lines = [_import_one(root, out, layout, force, quiet)]
    for warning in caught:  # one line each, not Python's file:line format
        click.echo(f"hotset: warning: {warning.message}", err=True)
    for line in lines:
        click.echo(line)


def _import_url(
    url: str, out: str | None, layout: str, splits: tuple[str, ...], force: bool, quiet: bool
) -> str:
    """An image tree in an object store: its manifest beside it, or in --out."""
    from hotset.data.store_import import import_store
    from hotset.errors import HotsetError

    if layout == "splits" or splits:
        raise HotsetError(
            f"{url}: a split tree in a store is imported one split at a time "
            f"(hotset data import {url.rstrip('/')}/train)"
        )
    manifest = import_store(url, out=out, layout=layout, force=force, progress=not quiet)
    where = f"{url.rstrip('/')}/manifest.csv" if out is None else str(_csv_of(out))
    return (
        f"imported {len(manifest)} samples, {manifest.total_bytes} bytes, "
        f"{manifest.num_classes} classes -> {where}"
    )


def _csv_of(out: str) -> object:
    from hotset.data.manifest import Manifest

    return Manifest.paths(out)[0]


def _import_one(root: str, out: str | None, layout: str, force: bool, quiet: bool) -> str:
    from hotset.data.importer import import_folder
    from hotset.data.manifest import Manifest

    manifest = import_folder(root, out=out, layout=layout, force=force, progress=not quiet)
    csv_path, _ = Manifest.paths(out if out is not None else root)
    skipped = manifest.meta.get("skipped_links", 0)
    return (
        f"imported {len(manifest)} samples, {manifest.total_bytes} bytes, "
        f"{manifest.num_classes} classes -> {csv_path}"
        + (f" (skipped {skipped} symbolic links leading outside {root})" if skipped else "")
    )


def _import_splits(
    root: str, out: str | None, splits: tuple[str, ...], force: bool, quiet: bool
) -> list[str]:
    """One line saying what was found, then one per split imported."""
    from pathlib import Path

    from hotset.data.import_splits import import_splits
    from hotset.data.importer import split_names
    from hotset.data.manifest import Manifest

    found = split_names(root)
    manifests = import_splits(root, out=out, splits=splits, force=force, progress=not quiet)
    first = next(iter(manifests.values()))
    lines = [
        f"{root} is split into {', '.join(found)}: one data set per split, "
        f"{first.num_classes} classes numbered over every split's class folders"
    ]
    for name, manifest in manifests.items():
        csv_path, _ = Manifest.paths(Path(out if out is not None else root) / name)
        skipped = manifest.meta.get("skipped_links", 0)
        lines.append(
            f"imported {name}: {len(manifest)} samples, {manifest.total_bytes} bytes, "
            f"{manifest.num_classes} classes -> {csv_path}"
            + (f" (skipped {skipped} symbolic links leading outside it)" if skipped else "")
        )
    return lines


@data.command("verify")
@click.argument("dataset", type=click.Path())
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def verify(dataset: str, quiet: bool) -> None:
    """Re-hash every sample, and every chunk of a packed set; exit 1 when any is wrong.

    A chunk is checked against chunks.json (size, xxh3) and each of its samples
    against the manifest; a chunks.json that cannot be read, or that was packed
    from other data, fails too.
    """
    from hotset.data import open_dataset
    from hotset.data.verify import verify as run_verify

    manifest, store = open_dataset(dataset)
    result = run_verify(manifest, store, progress=not quiet)
    for m in result.mismatches:
        click.echo(f"mismatch {m.key} expected {m.expected} actual {m.actual}")
    for key in result.missing:
        click.echo(f"missing {key}")
    click.echo(result.summary())
    chunks_ok = _verify_chunks(dataset, manifest, store, quiet=quiet)
    if not (result.ok and chunks_ok):
        # a plain SystemExit: click's non-standalone mode would swallow ctx.exit(1)
        sys.exit(1)


def _verify_chunks(dataset: str, manifest: Manifest, store: Store, *, quiet: bool) -> bool:
    """``hotset data verify``'s chunk half: print what is wrong; whether all is well."""
    from hotset.data.chunks import load_layout
    from hotset.data.verify import verify_chunks
    from hotset.errors import HotsetError

    try:
        layout = load_layout(dataset)
    except HotsetError as exc:  # unreadable chunks.json: the packed set is damaged
        click.echo(f"bad chunk layout: {exc}")
        return False
    if layout is None:
        return True
    result = verify_chunks(manifest, store, layout, progress=not quiet)
    if result.stale is not None:
        click.echo(f"stale chunks: {result.stale}")
    for bad in result.bad:
        click.echo(f"bad chunk {bad.key}: {bad.problem}")
    for note in result.notes:
        click.echo(f"note: {note}")
    click.echo(result.summary())
    if not result.ok and result.stale is None:
        click.echo(f"re-pack with `{layout.repack_command()}`")
    return result.ok


@data.command("digest")
@click.argument("dataset", type=click.Path())
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Digest file to write. Default: DATASET/digest.json.",
)
@click.option("--workers", default=4, show_default=True, type=int, help="Concurrent reads.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def digest(dataset: str, out: str | None, workers: int, quiet: bool) -> None:
    """Hash every sample (and chunk) with BLAKE2b-256: the capabilities of a shared cache.

    A loader given the digest (``digest=``) addresses a Redis cache by content,
    so jobs on copies of the same data share entries and others cannot form
    their keys (see hotset.data.digest for the format).
    """
    from hotset.data import open_dataset
    from hotset.data.chunks import load_layout
    from hotset.data.digest import compute_digest, default_digest_path, write_digest
    from hotset.errors import HotsetError

    if workers < 1:
        raise HotsetError(f"--workers must be a positive integer, got {workers!r}")
    target = out if out is not None else default_digest_path(dataset)
    manifest, store = open_dataset(dataset)
    layout = load_layout(dataset, manifest=manifest)
    made = compute_digest(
        manifest,
        store,
        unit_keys=() if layout is None else layout.chunk_keys,
        unit_hashes=() if layout is None else layout.chunk_hashes,
        progress=not quiet,
        workers=workers,
    )
    path = write_digest(made, target)
    chunks = f" and {made.units} chunks" if made.units else ""
    click.echo(f"digest of {made.count} samples{chunks} -> {path}")


@data.command("pack")
@click.argument("dataset", type=click.Path())
@click.option(
    "--chunk-size",
    default=64,
    show_default=True,
    type=int,
    help="Samples per chunk file (one storage request reads a whole chunk).",
)
@click.option(
    "--shuffle-seed",
    default=None,
    type=int,
    help="Seed of the shuffle that groups ids into chunks  [default: 0].",
)
@click.option(
    "--no-shuffle",
    is_flag=True,
    help="Group ids into chunks in id order (chunks of one class where ids follow classes).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def pack(
    dataset: str, chunk_size: int, shuffle_seed: int | None, no_shuffle: bool, quiet: bool
) -> None:
    """Store samples in chunks: one file per CHUNK-SIZE samples, plus chunks.json.

    DATASET is a directory or a URL (s3://bucket/prefix): a data set whose
    samples are in an object store is packed there, its chunk objects beside
    the samples and chunks.json beside manifest.csv, so a reader reads a chunk
    (or a run of its members) with ranged GETs of one object.

    Ids are grouped in a seeded shuffle (seed 0 unless --shuffle-seed says
    otherwise; --no-shuffle keeps id order), as Brand §3.2 makes its chunks: a
    chunk then holds random samples, not a run of neighbouring ids (of one
    class, where ids follow classes). The seed, or none, is recorded in
    chunks.json. Chunk files go to chunks/ under the dataset root, and the
    per-sample files stay. Every sample is checked against the manifest while
    packing; a re-pack replaces the old chunk files.
    """
    from hotset.data import open_dataset
    from hotset.data.chunks import DEFAULT_SHUFFLE_SEED, layout_path, pack_dataset
    from hotset.data.homogeneity import homogeneity_warning
    from hotset.data.opener import is_url
    from hotset.data.store_pack import pack_store, packs_in_store
    from hotset.errors import HotsetError

    if chunk_size < 1:
        raise HotsetError(f"--chunk-size must be a positive integer, got {chunk_size!r}")
    if shuffle_seed is not None and shuffle_seed < 0:
        raise HotsetError(f"--shuffle-seed must be a non-negative integer, got {shuffle_seed!r}")
    if no_shuffle and shuffle_seed is not None:
        raise HotsetError(
            f"--no-shuffle and --shuffle-seed {shuffle_seed}: give one (a seed shuffles)"
        )
    seed = None if no_shuffle else DEFAULT_SHUFFLE_SEED if shuffle_seed is None else shuffle_seed
    pack = pack_store if packs_in_store(dataset) else pack_dataset
    layout = pack(dataset, chunk_size=chunk_size, shuffle_seed=seed, progress=not quiet)
    order = "in id order" if seed is None else f"shuffled with seed {seed}"
    where = f"{dataset.rstrip('/')}/chunks.json" if is_url(dataset) else layout_path(dataset)
    click.echo(
        f"packed {layout.n} samples into {layout.n_chunks} chunks ({order}), "
        f"{layout.total_bytes} bytes -> {where}"
    )
    warning = homogeneity_warning(layout, open_dataset(dataset)[0].labels)
    if warning is not None:
        click.echo(f"hotset: warning: {warning}", err=True)


@data.command("upload")
@click.argument("dataset", type=click.Path(exists=True))
@click.argument("url")
@click.option("--force", is_flag=True, help="Replace a data set already at URL.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def upload(dataset: str, url: str, force: bool, quiet: bool) -> None:
    """Copy a local data set to URL (s3://bucket/prefix): samples, chunks, manifest last.

    The endpoint and credentials come from the standard AWS environment
    (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws/config).
    """
    from hotset.data.upload import upload_dataset

    sent = upload_dataset(dataset, url, force=force, progress=not quiet)
    click.echo(f"uploaded {dataset} -> {url} ({sent} bytes)")


@data.command("split")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--val", type=float, default=0.1, show_default=True, help="Share held out.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", type=click.Path(), default=None, help="Default: DATASET-split.")
@click.option("--force", is_flag=True, help="Replace existing output directories.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def split(dataset: str, val: float, seed: int, out: str | None, force: bool, quiet: bool) -> None:
    """Hold out a stratified VAL share of each class: OUT/train and OUT/val.

    Files are hard-linked, not copied (copied only where linking fails).
    """
    from hotset.data.split import split_dataset

    target = out or f"{dataset.rstrip('/')}-split"
    train, held = split_dataset(
        dataset, target, val=val, seed=seed, force=force, progress=not quiet
    )
    click.echo(f"{target}/train: {len(train)} samples; {target}/val: {len(held)} samples")


@data.command("subset")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.argument("out", type=click.Path())
@click.option("--n", "count", type=int, default=None, help="Keep this many, drawn at random.")
@click.option(
    "--ids",
    "ids_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A text file of ids to keep, one per line.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def subset(
    dataset: str,
    out: str,
    count: int | None,
    ids_file: str | None,
    seed: int,
    force: bool,
    quiet: bool,
) -> None:
    """Write part of DATASET to OUT: --n K at random (seeded), or the --ids of a file."""
    import numpy as np

    from hotset.data.manifest import Manifest
    from hotset.data.split import subset_dataset
    from hotset.errors import HotsetError
    from hotset.sim.trace import load_trace

    if (count is None) == (ids_file is None):
        raise HotsetError("subset: give exactly one of --n or --ids")
    if seed < 0:
        raise HotsetError(f"subset: --seed must be an integer >= 0, got {seed}")
    if ids_file is not None:
        ids = load_trace(ids_file)
    else:
        assert count is not None
        n = len(Manifest.load(dataset))
        if not 0 < count <= n:
            raise HotsetError(f"subset: --n must be in 1..{n}, got {count}")
        ids = np.sort(np.random.default_rng([seed, 7]).permutation(n)[:count])
    made = subset_dataset(dataset, out, ids, force=force, progress=not quiet)
    click.echo(f"{out}: {len(made)} samples")
