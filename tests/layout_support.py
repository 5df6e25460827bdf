"""In-memory chunk layouts for tests (no files; no pytest here)."""

from __future__ import annotations

import numpy as np

from hotset.data.chunks import ChunkLayout, chunk_key


def make_layout(sizes: np.ndarray, chunk_size: int, *, seed: int | None = None) -> ChunkLayout:
    """``chunk_size`` ids per chunk: in id order, or (``seed``) a seeded shuffle of the
    ids cut into chunks, as ``hotset data pack --shuffle-seed`` and Brand §3.2 do."""
    n = len(sizes)
    order = np.arange(n) if seed is None else np.random.default_rng(seed).permutation(n)
    chunk_of = np.empty(n, dtype=np.int64)
    offset = np.empty(n, dtype=np.int64)
    n_chunks = -(-n // chunk_size)
    chunk_sizes = np.zeros(n_chunks, dtype=np.int64)
    for pos, i in enumerate(order.tolist()):
        c = pos // chunk_size
        chunk_of[i], offset[i] = c, chunk_sizes[c]
        chunk_sizes[c] += sizes[i]
    return ChunkLayout(
        chunk_of=chunk_of,
        offset=offset,
        length=np.asarray(sizes, dtype=np.int64),
        chunk_keys=tuple(chunk_key(c) for c in range(n_chunks)),
        chunk_sizes=chunk_sizes,
        chunk_hashes=tuple("0" * 16 for _ in range(n_chunks)),
        chunk_size=chunk_size,
    )
