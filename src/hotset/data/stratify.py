"""The validation hold-out: which rows of a labelled data set are kept out of training.

One rule, shared by ``hotset data split`` (:mod:`hotset.data.split`), the
live-training simulator (:mod:`hotset.sim.live`) and the benchmarks, so a split
written to disk holds out exactly what a simulation at the same seed holds out.
It lives with the data because it is a property of the data set and its seed,
not of any simulation.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

#: the stream of ``default_rng([seed, _SPLIT_STREAM])`` that draws the validation split
_SPLIT_STREAM = 0x5EED_5917

__all__ = ["stratified_split"]


def stratified_split(
    labels: npt.NDArray[np.int64], *, val_frac: float, seed: int
) -> tuple[IntArray, IntArray]:
    """(train rows, validation rows), both sorted: ``round(val_frac * n_c)`` per class.

    Seeded by ``seed`` alone, so every system at one seed holds out the same
    samples. ``val_frac < 0.5`` leaves every class at least one training sample.
    """
    rng = np.random.default_rng([int(seed), _SPLIT_STREAM])
    val_parts: list[IntArray] = []
    for label in np.unique(labels).tolist():
        rows = np.flatnonzero(labels == label).astype(np.int64)
        take = math.floor(val_frac * len(rows) + 0.5)
        if take:
            val_parts.append(rng.permutation(rows)[:take])
    val = np.sort(np.concatenate(val_parts)) if val_parts else np.empty(0, dtype=np.int64)
    mask = np.ones(len(labels), dtype=bool)
    mask[val] = False
    return np.flatnonzero(mask).astype(np.int64), val.astype(np.int64)
