"""A small synthetic data set packed into chunk files, for tests of systems that read
chunks (Brand, Quiver, the engine's unit reads). No pytest here."""

from __future__ import annotations

from pathlib import Path

from hotset.data import SynthConfig, make_synth
from hotset.data.chunks import pack_dataset


def packed_synth(
    path: Path, *, n: int, seed: int, chunk_size: int = 8, shuffle_seed: int = 0
) -> Path:
    """``n`` 8x8 PNGs of 4 classes at ``path``, packed ``chunk_size`` per chunk in a
    seeded shuffle (``shuffle_seed``), as ``hotset data pack`` and Brand §3.2 do."""
    make_synth(path, SynthConfig(n=n, image_size=8, classes=4, seed=seed), workers=1)
    pack_dataset(path, chunk_size=chunk_size, shuffle_seed=shuffle_seed)
    return path


def label_sorted_synth(path: Path, *, n: int, seed: int, classes: int = 4) -> Path:
    """``n`` 8x8 PNGs at ``path`` whose ids follow their labels (all of class 0 first, then
    class 1, ...), as an ImageFolder tree imported class by class is: the same files as
    :func:`make_synth`'s, the manifest's rows sorted by label. Not packed."""
    import numpy as np

    from hotset.data import Manifest

    m = make_synth(path, SynthConfig(n=n, image_size=8, classes=classes, seed=seed), workers=1)
    order = np.argsort(m.labels, kind="stable")
    Manifest(
        np.arange(n),
        [m.keys[i] for i in order.tolist()],
        m.sizes[order],
        m.labels[order],
        [m.hashes[i] for i in order.tolist()],
        m.meta,
    ).save(path)
    return path
