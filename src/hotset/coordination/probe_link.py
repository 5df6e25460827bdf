"""A loader's link between its policy's benefit-aware placement and the probe board.

A policy that ``wants_board`` (``quiver[placement=true]``) stays pure: the loader
times the batches of its probe windows (``PlacesByBenefit.probe_window``: the first batches
of the probe epoch, without the cache, then the first of the next epoch, with it),
turns them into a record once both are timed (``PlacesByBenefit.probe_record``), publishes
it on the namespace's board (:mod:`hotset.coordination.probe_board`) and keeps it as
the job's own. Before each epoch begins -- before the loader records the epoch's
start state, so what was applied is part of the state a checkpoint saves -- it
reads the board and gives the policy its own record, the other jobs' records and
the namespace's budget (``PlacesByBenefit.apply_board``). Without a shared Redis namespace there is no
board: the job places by its own probe alone (a job that gains nothing still turns
its caching off). While the job runs, its record is published again every
``ttl_s / 3`` seconds, so it outlives its lease only if the job dies; when the
loader closes, the record is withdrawn.

A resumed loader has no own record until its policy probes again: until then the
policy places by the own record its state holds (``own=None``), against the board
as it is now; a resume between a probe's two windows loses that probe.

What another job's record can change is bounded twice: the board returns at most
64 records that parse and pass their checks (:mod:`hotset.coordination.probe_board`),
and on a namespace that is one data set's (``<key>@<identity>``, every namespace but
a content-addressed one) a record naming another data set is no job's of this
namespace: it is skipped here and counted (:meth:`ProbeLink.stats`), so only
records of the job's own data set reach the placement, where they cannot take its
space (``docs/distributed.md``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from hotset.coordination.probe_board import ProbeBoard
from hotset.engine.roles import PlacesByBenefit

__all__ = ["ProbeLink", "job_id"]


def job_id(rank: int) -> str:
    """A job's id on the board: random, so jobs on one namespace never collide; one per
    rank (each rank probes its own GPU, so a job's records add up to its GPUs)."""
    return f"job-{secrets.token_hex(6)}-r{rank}"


class ProbeLink:
    """Publish this job's probe; apply the board before each epoch (see the module)."""

    def __init__(
        self,
        board: ProbeBoard | None,
        policy: PlacesByBenefit,
        *,
        job: str,
        dataset: str,
        budget_bytes: int,
    ) -> None:
        self.board = board
        self.policy = policy
        self.job = job
        self.dataset = dataset
        self.budget_bytes = int(budget_bytes)
        #: this job's latest probe record (None until a probe's windows are timed)
        self.own: dict[str, Any] | None = None
        #: the miss window's batch times, until the hit window's are taken
        self._miss: list[float] | None = None
        self._timed = False  # the current epoch's window is taken
        self._published_at = 0.0
        #: records skipped here: another data set's on a namespace of this one's
        self.foreign = 0

    def before_epoch(self, epoch: int) -> None:
        """Before ``epoch`` begins: give the policy the board and the job's record."""
        self._timed = False
        others = [] if self.board is None else self.board.read()
        board = [r for r in others if r.get("job") != self.job]
        if self.board is not None and self.board.cache.namespace.endswith(f"@{self.dataset}"):
            mine = [r for r in board if r.get("dataset") == self.dataset]
            self.foreign += len(board) - len(mine)
            board = mine
        self.policy.apply_board(self.own, board, budget_bytes=self.budget_bytes, epoch=epoch)

    def stats(self) -> dict[str, int]:
        """What the job skipped of the board so far: failed calls, garbled records,
        records aged out unread, and other data sets' records (see the module)."""
        board = {} if self.board is None else self.board.stats()
        return {**board, "board_foreign": self.foreign}

    def after_batch(self, batch_seconds: Sequence[float]) -> None:
        """After each batch is timed: take a probe window once timed, publish the record
        once both are; renew the record's lease."""
        window = None if self._timed else self.policy.probe_window()
        if window is not None and len(batch_seconds) >= window[1]:
            self._timed = True
            self._take(window[0], list(batch_seconds[: window[1]]))
            return
        board, own = self.board, self.own
        if board is not None and own is not None and self._due(board.ttl_s / 3):
            self._publish()

    def _due(self, every_s: float) -> bool:
        return time.monotonic() - self._published_at > every_s

    def _take(self, which: str, times: list[float]) -> None:
        if which == "miss":
            self._miss = times
            return
        if self._miss is None:
            return  # resumed between the windows: this probe is lost
        record = self.policy.probe_record(self.job, self.dataset, self._miss + times)
        self._miss = None
        if record is not None:
            self.own = dict(record)
            self._publish()

    def _publish(self) -> None:
        self._published_at = time.monotonic()
        if self.board is not None and self.own is not None:
            self.board.publish(self.own)

    def leave(self) -> None:
        """The loader closes: the job's record stops counting now."""
        if self.board is not None and self.own is not None:
            self.board.withdraw(self.job)
