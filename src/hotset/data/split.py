"""Part of a data set as a data set of its own: a held-out split, or a subset.

Why new directories rather than a filter on the manifest: a training job, a
validation job and ``hotset advise`` all open a *data set* (a directory with a
manifest); a split that is one lets every tool use it unchanged. Files are
hard-linked (no copy, no extra space; the same inode) and copied only where a
link cannot be made (another filesystem, a store without links), so a split
of a large data set costs seconds. Ids are renumbered ``0..k-1`` in the order
given; keys, sizes, labels and hashes carry over, so the content identity of a
sample (its hash) is unchanged and caches keyed by content still match.

The validation split is stratified by label with the simulator's own rule
(:func:`hotset.data.stratify.stratified_split`), so ``hotset data split`` holds out
exactly what a simulation at the same seed holds out.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hotset.data.ids import subset_ids
from hotset.data.manifest import Manifest
from hotset.data.stratify import stratified_split
from hotset.data.writer import DatasetDir
from hotset.errors import HotsetError

__all__ = ["check_split_args", "split_dataset", "subset_dataset"]


def check_split_args(val: object, seed: object) -> None:
    """Refuse a bad ``val`` share or ``seed`` before anything is written (fail fast).

    Shared with :func:`hotset.data.digits.make_digits`, which checks them before
    it writes the whole data set, so a bad ``--val`` leaves no half-made output.
    """
    if isinstance(val, bool) or not isinstance(val, int | float) or not 0 < val < 0.5:
        raise HotsetError(f"split: --val must be a share in (0, 0.5), got {val!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise HotsetError(f"split: --seed must be an integer >= 0, got {seed!r}")


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def subset_dataset(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    ids: Sequence[int] | np.ndarray,
    *,
    force: bool = False,
    progress: bool = False,
) -> Manifest:
    """Write the samples ``ids`` of ``source`` (a directory) as a data set at ``out``."""
    src = Path(source)
    manifest = Manifest.load(src)
    idx = subset_ids(ids, len(manifest))
    keys = [manifest.keys[i] for i in idx.tolist()]
    from tqdm import tqdm

    with DatasetDir(out, force=force) as build:
        for key in tqdm(keys, desc="linking", unit="file", file=sys.stderr, disable=not progress):
            _link_or_copy(src / key, build.path / key)
        meta = {k: v for k, v in manifest.meta.items() if k != "num_samples"}
        meta["subset_of"] = str(src.resolve())
        sub = Manifest(
            np.arange(len(idx)),
            keys,
            manifest.sizes[idx],
            manifest.labels[idx],
            [manifest.hashes[i] for i in idx.tolist()],
            meta,
        )
        sub.save(build.path)
        build.commit()
    return sub


def split_dataset(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    val: float,
    seed: int,
    force: bool = False,
    progress: bool = False,
) -> tuple[Manifest, Manifest]:
    """``out/train`` and ``out/val``: a stratified hold-out of ``val`` of each class."""
    check_split_args(val, seed)
    manifest = Manifest.load(Path(source))
    train_ids, val_ids = stratified_split(np.asarray(manifest.labels), val_frac=val, seed=seed)
    if len(val_ids) == 0:
        raise HotsetError(f"split: --val {val} holds out no sample of {len(manifest)}")
    root = Path(out)
    train = subset_dataset(source, root / "train", train_ids, force=force, progress=progress)
    held = subset_dataset(source, root / "val", val_ids, force=force, progress=progress)
    return train, held
