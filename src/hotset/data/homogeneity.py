"""Is a chunk layout label-homogeneous? -- chunks of (nearly) one class each.

A system that reads whole chunks (Brand, Quiver) serves a batch a chunk at a
time. Chunks cut in id order from a data set whose ids follow its classes (an
ImageFolder tree imported class by class) hold one class each, and training on
them goes badly: batches of one or two classes, and epochs whose orders barely
differ (issue #27: Quiver at 30 % top-1 where a plain loader reached 55 %). This
module tells such a layout from a shuffled one, cheaply, so that the loader and
``hotset data pack`` can say so and give the command that re-packs it.

The measure
-----------
*Purity* is the share of samples that carry their chunk's most common label
(1.0: every chunk is one class). Even a shuffled layout is not 0: a chunk of 8
samples of 4 balanced classes has a majority of about half its members by
chance alone. So purity is compared with what a random layout of the *same*
label counts and chunk sizes gives, estimated by drawing it (:data:`DRAWS`
seeded draws): ``excess = (purity - shuffled) / (1 - shuffled)`` is 0 for a
layout no purer than a shuffle and 1 for chunks of one label each. A layout is
label-homogeneous when its excess is at least :data:`THRESHOLD` (0.5: more than
half-way from a shuffle to pure chunks). A shuffle lands near 0 (within a few
hundredths with 64-sample chunks, about 0.1 with 13 chunks of 8), a class-sorted
layout near 1, so the threshold sits far from both.

It stays cheap on any data set: at most :data:`MAX_CHUNKS` chunks, chosen at
random (seeded), are measured, and the random layout is drawn for those chunks
only -- a few tens of thousands of labels, milliseconds, whatever the data
set's size. No verdict (None) where there is nothing to judge: fewer than two
distinct labels (an unlabelled set), or chunks so small, or one class so
dominant, that a shuffle is within :data:`MIN_ROOM` of pure itself (re-packing
could not help).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hotset.data.chunks import ChunkLayout

__all__ = [
    "DRAWS",
    "MAX_CHUNKS",
    "MIN_ROOM",
    "THRESHOLD",
    "LabelPurity",
    "homogeneity_warning",
    "label_purity",
]

#: excess purity (see the module docstring) from which a layout is label-homogeneous
THRESHOLD = 0.5
#: chunks measured at most (a seeded random choice of them on larger layouts)
MAX_CHUNKS = 512
#: random layouts drawn to estimate a shuffle's purity
DRAWS = 4
#: no verdict where a shuffle's purity is within this of 1 (nothing a re-pack can fix)
MIN_ROOM = 0.05
_SEED = 0x1ABE1


@dataclass(frozen=True)
class LabelPurity:
    """How pure a layout's chunks are, against a random layout of the same labels."""

    #: share of the measured samples that carry their chunk's most common label
    purity: float
    #: the same share in a random layout of the same label counts and chunk sizes
    shuffled: float
    #: chunks measured
    chunks: int

    @property
    def excess(self) -> float:
        """0: no purer than a shuffle; 1: chunks of one label each."""
        return (self.purity - self.shuffled) / (1.0 - self.shuffled)

    @property
    def homogeneous(self) -> bool:
        """Whether the excess reaches :data:`THRESHOLD`."""
        return self.excess >= THRESHOLD


def _majority(groups: npt.NDArray[np.int64], labels: npt.NDArray[np.int64], n_labels: int) -> int:
    """Sum over groups of the count of the group's most common label."""
    pairs, counts = np.unique(groups * n_labels + labels, return_counts=True)
    best = np.zeros(int(groups.max()) + 1, dtype=np.int64)
    np.maximum.at(best, pairs // n_labels, counts)
    return int(best.sum())


def label_purity(layout: ChunkLayout, labels: npt.ArrayLike) -> LabelPurity | None:
    """The purity of ``layout``'s chunks by ``labels`` (one per sample id), or None
    where there is nothing to judge (see the module docstring)."""
    codes_of = np.unique(np.asarray(labels, dtype=np.int64), return_inverse=True)
    values, codes = codes_of[0], codes_of[1].reshape(-1).astype(np.int64)
    if len(values) < 2 or len(codes) != layout.n:
        return None
    rng = np.random.default_rng(_SEED)
    chosen = np.arange(layout.n_chunks)
    if layout.n_chunks > MAX_CHUNKS:
        chosen = np.sort(rng.choice(layout.n_chunks, size=MAX_CHUNKS, replace=False))
    members = [layout.members(int(c)) for c in chosen]
    sizes = np.asarray([len(m) for m in members], dtype=np.int64)
    groups = np.repeat(np.arange(len(members), dtype=np.int64), sizes)
    ids = np.concatenate(members)
    total = len(ids)
    purity = _majority(groups, codes[ids], len(values)) / total
    drawn = [
        _majority(groups, codes[rng.choice(layout.n, size=total, replace=False)], len(values))
        for _ in range(DRAWS)
    ]
    shuffled = sum(drawn) / (DRAWS * total)
    if 1.0 - shuffled < MIN_ROOM:
        return None
    return LabelPurity(purity=purity, shuffled=shuffled, chunks=len(members))


def homogeneity_warning(layout: ChunkLayout, labels: npt.ArrayLike) -> str | None:
    """The warning for a label-homogeneous ``layout`` (with the command that re-packs it
    shuffled), or None for a layout that is not (or where there is nothing to judge)."""
    found = label_purity(layout, labels)
    if found is None or not found.homogeneous:
        return None
    where = f"the chunks of {layout.dataset!r}" if layout.dataset else "the data set's chunks"
    command = layout.repack_command(reshuffle=True)
    advice = f"re-pack it in a seeded shuffle: `{command}`"  # a URL's set: in its store
    return (
        f"{where} are label-homogeneous: {found.purity:.0%} of their samples share their "
        f"chunk's most common label, where a shuffled layout gives {found.shuffled:.0%} "
        f"(shuffle: {layout.shuffle}); a system that reads whole chunks then trains on "
        "batches of few classes, in nearly the same order every epoch, and learns worse; "
        f"{advice}"
    )
