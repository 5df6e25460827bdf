"""The plain random order: a fresh seeded permutation every epoch (``shuffle=True``).

The permutation is a function of (seed, epoch) only, so every rank draws the
same one and keeps its own shard (:func:`hotset.samplers.shard.shard`), and a
resumed job recomputes exactly the order it stopped in.
"""

from __future__ import annotations

from typing import ClassVar

from hotset.samplers.base import EpochContext, IntArray, Sampler
from hotset.samplers.shard import shard


class RandomSampler(Sampler):
    """A seeded permutation of ``0..n-1`` per epoch, sharded across ranks."""

    name: ClassVar[str] = "random"

    def __init__(self, n: int, *, seed: int = 0, drop_last: bool = False) -> None:
        super().__init__(n, seed=seed)
        self.drop_last = bool(drop_last)

    def global_order(self, epoch: int) -> IntArray:
        """The whole epoch's permutation, before sharding."""
        return self.epoch_rng(epoch).permutation(self.n).astype("int64", copy=False)

    def order(self, ctx: EpochContext) -> IntArray:
        return shard(
            self.global_order(ctx.epoch), ctx.rank, ctx.world_size, drop_last=self.drop_last
        )
