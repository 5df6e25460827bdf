"""Where a loader is in its epochs: the position a checkpoint saves and a resume restores.

The loader kept these as eight loose fields beside forty others, and its checkpoint
mixin read them one by one. They change together -- an epoch begins, a batch is
yielded, a loss is given, the epoch closes -- and the checkpoint saves them together,
so they are one object: the loader and :mod:`hotset.torch.checkpoint` both go through
it, and its rules (a loss only for a sample yielded and not yet answered; the next
epoch is the one after the last unless ``set_epoch`` named one) live in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError

__all__ = ["EpochCursor"]


@dataclass
class EpochCursor:
    """The loop's position over ``n`` samples (one per data-set id)."""

    n: int
    #: idle | running | finished (every batch yielded, the epoch not closed yet)
    status: str = "idle"
    #: the number of the next epoch to begin
    next_epoch: int = 0
    #: ``set_epoch`` named ``next_epoch`` since the last epoch began
    epoch_set: bool = False
    #: batches yielded this epoch
    yielded: int = 0
    #: update() calls this epoch (a learning system without any fails clearly)
    updates: int = 0
    #: validation accuracy given for this epoch, not yet handed to the system
    pending_val: float | None = None
    #: seconds from the previous yield (or the epoch's first ask) to each batch's yield
    batch_seconds: list[float] = field(default_factory=list)
    #: the epoch was restored from a checkpoint and not re-entered yet
    resumed: bool = False
    #: per id: times yielded this epoch whose loss was not given yet
    outstanding: npt.NDArray[np.int32] = field(init=False)

    def __post_init__(self) -> None:
        self.outstanding = np.zeros(self.n, dtype=np.int32)

    @property
    def in_epoch(self) -> bool:
        """An epoch began and was not closed (running, or finished and not closed)."""
        return self.status in ("running", "finished")

    def name_next(self, epoch: int) -> None:
        """``set_epoch``: the next epoch to begin."""
        self.next_epoch = epoch
        self.epoch_set = True

    def begin(self) -> None:
        """An epoch begins: nothing yielded, nothing answered, no validation yet."""
        self.status = "running"
        self.yielded = 0
        self.batch_seconds = []
        self.updates = 0
        self.outstanding[:] = 0
        self.pending_val = None
        self.epoch_set = False

    def served(self, ids: npt.NDArray[np.int64]) -> None:
        """A batch of ``ids`` was yielded: each owes one loss."""
        np.add.at(self.outstanding, ids, 1)
        self.yielded += 1

    def answer(self, ids: npt.NDArray[np.int64], epoch: int) -> None:
        """``update``'s losses for ``ids``: each must be owed (yielded in this epoch and
        not answered yet), else a HotsetError naming the first id that is not."""
        n = self.n
        bad = (ids < 0) | (ids >= n)
        if bad.any():
            sid = int(ids[int(np.argmax(bad))])
            raise HotsetError(f"update: sample id {sid} is not in the dataset (ids 0..{n - 1})")
        uniq, need = np.unique(ids, return_counts=True)
        short = need > self.outstanding[uniq]
        if short.any():
            sid = int(uniq[int(np.argmax(short))])
            raise HotsetError(
                f"update: sample id {sid} was not yielded by this loader in epoch "
                f"{epoch} (or its loss was already given)"
            )
        self.outstanding[uniq] -= need.astype(np.int32)
        self.updates += 1

    def timed_whole(self) -> list[float]:
        """This epoch's batch times if it was timed from its first batch, else none (an
        epoch resumed mid-way)."""
        return self.batch_seconds if len(self.batch_seconds) == self.yielded else []

    def close(self, epoch: int) -> None:
        """Epoch ``epoch`` closed: the next is the one after it unless one was named."""
        self.status = "idle"
        if not self.epoch_set:
            self.next_epoch = epoch + 1

    def state(self) -> dict[str, Any]:
        """What a checkpoint saves of the position (the outstanding counts mid-epoch)."""
        return {
            "status": self.status,
            "next_epoch": self.next_epoch,
            "epoch_set": self.epoch_set,
            "yielded": self.yielded,
            "updates": self.updates,
            "outstanding": self.outstanding.copy() if self.in_epoch else None,
            "pending_val": self.pending_val,
        }

    def load_boundary(self, state: Mapping[str, Any]) -> None:
        """The fields a state restores whether or not it was saved mid-epoch."""
        self.next_epoch = int(state["next_epoch"])
        self.epoch_set = bool(state["epoch_set"])
        self.pending_val = state["pending_val"]

    @staticmethod
    def yielded_in(state: Mapping[str, Any], *, n_batches: int, epoch: int) -> int:
        """The batches a mid-epoch state says were yielded, checked against the epoch's."""
        yielded = int(state["yielded"])
        if yielded > n_batches:
            raise HotsetError(
                f"loader state: yielded={yielded} batches, but epoch {epoch} has {n_batches}"
            )
        return yielded

    def load_epoch(self, state: Mapping[str, Any], *, yielded: int, updates: int) -> None:
        """A state saved mid-epoch, replayed up to ``yielded`` batches: its position."""
        self.load_boundary(state)
        self.yielded = yielded
        self.updates = updates
        self.outstanding[:] = np.asarray(state["outstanding"], dtype=np.int32)
        self.status = str(state["status"])
        self.resumed = True
