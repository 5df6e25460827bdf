"""What the engine needs from a system: the few members the planner calls, as a Protocol.

Why a Protocol and not the class. :class:`hotset.systems.base.System` composes a
sampler, a scorer and an importance table -- layers that sit above the engine --
and the engine calls none of them directly: it asks for an epoch's order, hands
back feedback and loss weights, and closes the epoch. Naming only those members
here lets the engine type its driver without importing :mod:`hotset.systems`
(nor the samplers and the importance table behind it), and any object with these
members -- the concrete class, or a test double -- can be driven. mypy checks
that the concrete class conforms wherever it is handed to the planner.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.capabilities import Capabilities
from hotset.engine.policy import Policy


class System(Protocol):
    """A named composition the planner drives: ``begin_epoch`` -> (decide, feedback)* -> ``end_epoch``.

    Every decision is the policy's (the planner calls :attr:`policy` directly);
    the system supplies the order, absorbs feedback, and weighs losses.
    """

    name: str
    policy: Policy

    @property
    def capabilities(self) -> Capabilities:
        """The policy's needs, plus whether the system learns from training feedback."""
        ...

    def begin_epoch(
        self, epoch: int, *, rank: int = 0, world_size: int = 1, announce: bool = True
    ) -> IntArray:
        """This rank's order for ``epoch`` (told to the policy when ``announce``)."""
        ...

    def feedback(self, ids: IntArray, losses: npt.NDArray[np.float64], *, epoch: int) -> None:
        """Per-sample losses of one step, keyed by the ids actually trained on."""
        ...

    def weights(self, ids: IntArray) -> npt.NDArray[np.float64]:
        """Loss weights for ``ids`` (all ones unless the system samples by importance)."""
        ...

    def end_epoch(self, *, train_loss: float, val_accuracy: float | None) -> None:
        """Close the epoch: record the training loss and accuracy, tell the policy."""
        ...


__all__ = ["System"]
