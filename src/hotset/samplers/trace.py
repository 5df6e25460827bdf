"""A recorded order: epoch ``e`` is the ``e``-th given array, whatever the feedback.

It lets the trace simulator drive a plain policy through the same engine as
the samplers that compute their orders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from hotset.errors import HotsetError
from hotset.samplers.base import EpochContext, IntArray, Sampler


class TraceSampler(Sampler):
    """Replays fixed per-epoch orders over ids ``0..n-1``."""

    name: ClassVar[str] = "trace"

    def __init__(self, epochs: Sequence[IntArray], n: int) -> None:
        super().__init__(n, seed=0)
        self.epochs = [np.asarray(e, dtype=np.int64) for e in epochs]

    def order(self, ctx: EpochContext) -> IntArray:
        if not 0 <= ctx.epoch < len(self.epochs):
            raise HotsetError(
                f"the trace has {len(self.epochs)} epoch(s); epoch {ctx.epoch} was asked for"
            )
        if ctx.world_size != 1:
            raise HotsetError("a recorded trace is one rank's order; world_size must be 1")
        return self.epochs[ctx.epoch]
