"""scikit-learn's bundled 8x8 digits (1,797 images, 10 classes) as a hotset dataset.

A real (not synthetic) dataset that ships inside a pip package: tests and demos
can train on natural data without a download.

With ``val`` the whole set stays at ``out`` (what the benchmarks, examples and
every existing caller open) and a stratified hold-out is added beside it as two
data sets, ``out/split/train`` and ``out/split/val``, whose files are hard links
to the whole set's (:func:`hotset.data.split.split_dataset`): a validation loop
gets unseen samples without a second command and without a second copy. Not
``out/train``: the whole set's own keys already live under ``train/``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from hotset.data.manifest import Manifest, content_hash
from hotset.data.writer import DatasetDir, check_format, encode_image, sample_key

GENERATOR = "sklearn.datasets.load_digits"
#: where ``make_digits(..., val=...)`` puts its hold-out, under ``out``
SPLIT_DIR = "split"


def digit_pixels() -> tuple[np.ndarray, np.ndarray]:
    """(uint8 images (1797, 8, 8) scaled from 0..16 to 0..255, int64 labels)."""
    from sklearn.datasets import load_digits  # lazy: sklearn is slow to import

    bunch = load_digits()
    images = np.asarray(bunch.images, dtype=np.float64)
    pixels = np.clip(np.rint(images * (255.0 / 16.0)), 0, 255).astype(np.uint8)
    return pixels, np.asarray(bunch.target, dtype=np.int64)


def make_digits(
    out: str | os.PathLike[str],
    *,
    fmt: str = "png",
    force: bool = False,
    progress: bool = False,
    val: float = 0.0,
    seed: int = 0,
) -> Manifest:
    """Write the digits as grayscale image files plus a manifest into ``out`` (all-or-nothing).

    ``val`` in (0, 0.5) also writes ``out/split/train`` and ``out/split/val``,
    a hold-out of that share of each class drawn with ``seed``; 0 (the default
    here, so library callers keep the one data set) writes none. The returned
    manifest is always the whole set's.
    """
    check_format(fmt)
    if val != 0:
        from hotset.data.split import check_split_args

        check_split_args(val, seed)  # before the whole set is written, not after
    pixels, labels = digit_pixels()
    n = len(labels)
    keys = [sample_key(i, n, fmt) for i in range(n)]
    sizes: list[int] = []
    hashes: list[str] = []
    meta = {
        "format": fmt,
        "image_size": int(pixels.shape[1]),
        "channels": 1,
        "num_classes": 10,
        "class_names": [str(k) for k in range(10)],
        "generator": GENERATOR,
    }
    from tqdm import tqdm

    with DatasetDir(out, force=force) as build:
        for key, px in tqdm(
            zip(keys, pixels, strict=True),
            total=n,
            desc="digits",
            unit="img",
            file=sys.stderr,
            disable=not progress,
        ):
            data = encode_image(px, fmt)
            build.write(key, data)
            sizes.append(len(data))
            hashes.append(content_hash(data))
        manifest = Manifest(np.arange(n), keys, sizes, labels, hashes, meta)
        manifest.save(build.path)
        build.commit()
    if val != 0:
        from hotset.data.split import split_dataset

        split_dataset(out, Path(out) / SPLIT_DIR, val=val, seed=seed, force=True, progress=progress)
    return manifest
