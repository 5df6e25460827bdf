"""The sampler interface: an epoch's order as a pure function of its context.

An order depends only on what :class:`EpochContext` carries (seed is the
sampler's own), never on a clock or on global random state, so every rank
computes the same global order and takes its own shard, and a resumed job
recomputes exactly the order it was interrupted in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class EpochContext:
    """Everything an order may depend on besides the sampler's seed."""

    epoch: int
    rank: int = 0
    world_size: int = 1
    #: importance score per sample id (a snapshot), or None before any feedback
    scores: npt.NDArray[np.float64] | None = None
    #: ids resident in the cache when the epoch starts (cache-aware samplers)
    resident: frozenset[int] = field(default_factory=frozenset)
    #: validation accuracy after each finished epoch, oldest first
    val_accuracy: tuple[float, ...] = ()
    #: mean training loss of each finished epoch, oldest first
    train_loss: tuple[float, ...] = ()
    #: the last epoch each sample id was trained in (-1: never), or None if unknown
    last_epoch: npt.NDArray[np.int64] | None = None
    #: the latest training loss of each sample id (NaN: never trained), or None
    losses: npt.NDArray[np.float64] | None = None


class Sampler(ABC):
    """Produces the ids one rank reads in one epoch."""

    name: ClassVar[str] = "sampler"

    def __init__(self, n: int, *, seed: int = 0) -> None:
        if n <= 0:
            from hotset.errors import HotsetError

            raise HotsetError(f"sampler: dataset size must be positive, got {n}")
        self.n = int(n)
        self.seed = int(seed)

    @abstractmethod
    def order(self, ctx: EpochContext) -> IntArray:
        """This rank's ids for ``ctx.epoch``, in the order they are read."""

    def epoch_rng(self, epoch: int) -> np.random.Generator:
        """The generator for one epoch: a function of (seed, epoch) only."""
        return np.random.default_rng([self.seed, int(epoch)])
