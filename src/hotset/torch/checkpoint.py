"""The loader's checkpoint: :meth:`state_dict`, and a restore that is all or nothing.

A state holds the loader's identity (what a state must share with a loader to
resume in it), the epoch's position and bookkeeping, the System's mutable state
and the feedback given so far this epoch. Mid-epoch, the System's state is the
one the epoch *began* with: a resume replays the epoch's plans and feedback up
to where it stopped (:meth:`~hotset.engine.planner.Planner.replay`), so the
resumed epoch makes the decisions the interrupted one made. A state is checked
whole before anything of it is restored: its fields (:mod:`hotset.torch.state`),
then the whole restore, rehearsed on scratch parts (:mod:`hotset.torch.restorecheck`),
so a refused state leaves the loader exactly as it was -- its running iterator, its
cache, its next batches. A restore that still failed half-way (it should not) puts
back the state the loader had, as before.

What a state is made of (version 2): plain Python values and uint8 tensors,
nothing else, so ``torch.load`` reads it with its default ``weights_only=True``
(Lightning's resume among others). Its arrays are packed losslessly and
compactly (:mod:`hotset.torch.statecodec`), and what the resume re-derives is
not stored: the epoch's order follows from the System's start state and the
epoch, and the ids of the feedback given so far are stored as their difference
from the ids the order put in the batch the loop held (zero unless a sample was
substituted or the loop reported other ids), which packs to almost nothing.
Version 1 states (numpy arrays inside) are still read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from hotset.engine.counters import Coverage
from hotset.engine.state_ids import state_ids
from hotset.errors import HotsetError
from hotset.systems.base import System
from hotset.torch.builder import LoaderParts
from hotset.torch.cursor import EpochCursor
from hotset.torch.dataset import HotsetDataset
from hotset.torch.options import LoaderOptions
from hotset.torch.report import EpochStats
from hotset.torch.restorecheck import Rehearsal, system_like
from hotset.torch.state import check_loader_state, readable_state
from hotset.torch.statecodec import pack
from hotset.torch.systemstate import feedback_rows, load_system_state, predicted_ids, system_state

__all__ = ["STATE_VERSION", "Checkpoints", "load_system_state", "system_state"]

#: the version :meth:`Checkpoints.state_dict` writes (:data:`hotset.torch.state.VERSIONS` are read)
STATE_VERSION = 2


class Checkpoints:
    """The loader's :meth:`state_dict` and :meth:`load_state_dict` (a mixin of
    :class:`~hotset.torch.loader.HotsetLoader`, which owns the fields below)."""

    system: System
    options: LoaderOptions
    data: HotsetDataset
    batch_size: int
    seed: int
    rank: int
    world_size: int
    lag: int
    _parts: LoaderParts
    _coverage: Coverage
    _cursor: EpochCursor
    _start_state: dict[str, Any] | None
    _history: list[EpochStats]
    _current: EpochStats | None

    if TYPE_CHECKING:  # the loader's epoch steps a restore takes

        def _stop_iteration(self) -> None: ...
        def _begin_epoch(self, epoch: int) -> None: ...
        def _abandon_unwritten(self, *, clear: bool) -> None: ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly, at epoch boundaries and mid-epoch, as
        plain Python values and tensors: ``torch.load(path)`` reads it as it is."""
        state: dict[str, Any] = pack(self._raw_state())
        return state

    def _raw_state(self) -> dict[str, Any]:
        """The state before packing: numpy arrays where the state has arrays."""
        running = self._cursor.in_epoch
        cursor = self._cursor.state()
        # the order of the keys is the packed state's (its arrays are numbered in it)
        return {
            **self._identity(),
            "lag": self.lag,
            "status": cursor["status"],
            "epoch": self._parts.planner.epoch,
            "next_epoch": cursor["next_epoch"],
            "epoch_set": cursor["epoch_set"],
            "yielded": cursor["yielded"],
            "updates": cursor["updates"],
            "system_state": self._start_state if running else system_state(self.system),
            "feedback": self._feedback_columns() if running else None,
            "outstanding": cursor["outstanding"],
            "pending_val": cursor["pending_val"],
            "history": [s.state() for s in self._history],
            "coverage": self._coverage.state_dict(),
            "current": self._current.state() if self._current is not None else None,
            # ids read ahead and not used yet, when the saved epoch began (the replay goes
            # on from there): the counters name their first use fetched ahead after a resume
            "fetched_ahead": self._parts.planner.ahead_at_start
            if running
            else self._parts.planner.ahead.ids(),
        }

    def _feedback_columns(self) -> dict[str, Any]:
        """This epoch's feedback as columns: one row per ``update`` call, and every
        (id, loss) in call order, each id as its difference from the predicted one."""
        fb = self._parts.planner.feedback_state()
        tags = np.asarray(fb["tags"], dtype=np.int64)
        lengths = np.array([len(ids) for ids in fb["ids"]], dtype=np.int64)
        ids = np.concatenate([np.zeros(0, np.int64), *fb["ids"]]).astype(np.int64)
        losses = np.concatenate([np.zeros(0), *fb["losses"]]).astype(np.float64)
        return {
            "tags": tags,
            "lengths": lengths,
            "ids_minus_order": ids
            - predicted_ids(self._parts.planner.order, self.batch_size, tags, lengths),
            "losses": losses,
            "applied_at": np.asarray(fb["applied_at"], dtype=np.int64),
        }

    def _identity(self) -> dict[str, Any]:
        """What a state must share with this loader to resume in it, the budget this
        rank's policy plans in included (a resumed policy must fit it)."""
        cap = self.system.policy.budget.capacity_bytes
        return {
            "version": STATE_VERSION,
            "system": self.system.name,
            "n": self._cursor.n,
            "batch_size": self.batch_size,
            "seed": self.seed,
            "rank": self.rank,
            "world_size": self.world_size,
            "cache_bytes": None if cap is None else int(cap),
        }

    def _rehearsal(self) -> Rehearsal:
        """Scratch parts like this loader's, to rehearse a state on (hotset.torch.restorecheck)."""
        planner, n = self._parts.planner, self._cursor.n
        return Rehearsal(
            fresh_system=system_like(self.system, self.options, n, self.data.layout),
            n=n,
            batch_size=self.batch_size,
            lag=self.lag,
            drop_last=planner.drop_last,
            sizes=planner.sizes,
            rank=self.rank,
            world_size=self.world_size,
        )

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from :meth:`state_dict`; the next ``iter`` continues where it stopped.

        The cache is cleared: ids the restored policy holds are read from storage
        again the first time they are served (counted as ``rebuild_reads``). A
        state that cannot be restored is a :class:`HotsetError` naming what is
        wrong, and leaves the loader as it was (:mod:`hotset.torch.state`).
        """
        state = readable_state(state)
        check_loader_state(state, self._identity())
        self._rehearsal().check(state)  # the whole restore, on scratch parts first
        try:
            before: dict[str, Any] | None = self._raw_state()
        except HotsetError:
            before = None  # a system that cannot checkpoint has nothing to roll back to
        try:
            self._restore(state)
        except Exception as exc:
            if before is not None:
                with contextlib.suppress(Exception):
                    self._restore(before)
            if isinstance(exc, HotsetError):
                raise
            raise HotsetError(
                f"loader state: malformed ({type(exc).__name__}: {exc}); the loader is "
                "left as it was"
            ) from exc

    def _restore(self, state: Mapping[str, Any]) -> None:
        self._stop_iteration()
        load_system_state(self.system, state["system_state"])
        # optional: states saved before it existed count such uses as exact hits
        ahead = state_ids(state.get("fetched_ahead", []), None, "loader state: fetched_ahead")
        self._parts.planner.ahead.load(ahead)
        self._history = [EpochStats.from_state(s) for s in state["history"]]
        self._coverage.load_state_dict(state["coverage"])
        self._current = None
        self._cursor.load_boundary(state)
        if state["status"] == "idle":
            self._cursor.status = "idle"
            self._parts.planner.epoch = int(state["epoch"])
            self._start_state = None
        else:
            self._restore_epoch(state)
        self._abandon_unwritten(clear=True)

    def _restore_epoch(self, state: Mapping[str, Any]) -> None:
        """A state saved mid-epoch (or at its end): begin it again and replay it."""
        epoch = int(state["epoch"])
        self._begin_epoch(epoch)
        cursor = self._cursor
        feedback, applied_at = feedback_rows(
            state["feedback"], self._parts.planner.order, self.batch_size, cursor.n
        )
        yielded = cursor.yielded_in(state, n_batches=self._parts.planner.n_batches, epoch=epoch)
        self._parts.planner.replay(yielded, feedback, applied_at)
        cursor.load_epoch(state, yielded=yielded, updates=int(state.get("updates", len(feedback))))
        if state["current"] is not None:
            self._current = EpochStats.from_state(state["current"])
