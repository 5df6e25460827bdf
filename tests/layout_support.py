"""In-memory chunk layouts for tests (no files; no pytest here)."""

from __future__ import annotations

import numpy as np

from hotset.data.chunks import ChunkLayout, sized_layout


def make_layout(sizes: np.ndarray, chunk_size: int, *, seed: int | None = None) -> ChunkLayout:
    """``chunk_size`` ids per chunk: in id order, or (``seed``) a seeded shuffle of the
    ids cut into chunks, as ``hotset data pack --shuffle-seed`` and Brand §3.2 do."""
    order = None if seed is None else np.random.default_rng(seed).permutation(len(sizes))
    return sized_layout(np.asarray(sizes), chunk_size, order=order)
