"""Training feedback, applied to the system with a fixed lag (see :mod:`hotset.engine.planner`).

A DataLoader plans ahead of training, so feedback given while the loop held
batch ``b`` is applied just before batch ``b + lag + 1`` is planned. Keeping
the queue, the log of what was given and where it was applied in one place is
what lets a resumed loader re-apply feedback exactly where it was applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.system import System

FloatArray = npt.NDArray[np.float64]


@dataclass
class Feedback:
    tag: int  # the batch index the training loop held when it gave this feedback
    ids: IntArray
    losses: FloatArray
    slot: int = -1  # its position in the epoch's feedback log


class FeedbackQueue:
    """Feedback given this epoch: queued, applied in tag then arrival order, and logged."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.reset()

    def reset(self) -> None:
        self.queue: list[Feedback] = []  # given, not yet applied
        self.log: list[Feedback] = []  # everything given this epoch, in arrival order
        self.applied_at: list[int] = []  # planned-count at which log[i] was applied
        self.loss_sum = 0.0
        self.loss_count = 0

    @property
    def mean_loss(self) -> float:
        return self.loss_sum / self.loss_count if self.loss_count else float("nan")

    def give(self, tag: int, ids: IntArray, losses: FloatArray) -> None:
        fb = Feedback(tag, ids, losses, slot=len(self.log))
        self.queue.append(fb)
        self.log.append(fb)
        self.applied_at.append(-1)

    def apply(self, until: int | None, *, epoch: int, at: int) -> None:
        """Apply queued feedback tagged ``<= until`` (all when None); ``at``: batches planned."""
        if not self.queue:
            return
        ready = [fb for fb in self.queue if until is None or fb.tag <= until]
        if not ready:
            return
        ready.sort(key=lambda fb: fb.tag)  # stable: arrival order within a tag
        self.queue = [fb for fb in self.queue if not (until is None or fb.tag <= until)]
        for fb in ready:
            self._feed(fb, epoch)
            self.applied_at[fb.slot] = at

    def apply_now(self, fb: Feedback, *, epoch: int, at: int) -> None:
        """Apply one feedback out of the queue (a replay re-applying it where it was)."""
        self._feed(fb, epoch)
        self.log.append(Feedback(fb.tag, fb.ids, fb.losses, slot=len(self.log)))
        self.applied_at.append(at)

    def _feed(self, fb: Feedback, epoch: int) -> None:
        self.system.feedback(fb.ids, fb.losses, epoch=epoch)
        self.loss_sum += float(fb.losses.sum())
        self.loss_count += len(fb.losses)

    def state(self) -> dict[str, Any]:
        return {
            "tags": [fb.tag for fb in self.log],
            "ids": [fb.ids.copy() for fb in self.log],
            "losses": [fb.losses.copy() for fb in self.log],
            "applied_at": list(self.applied_at),
        }
