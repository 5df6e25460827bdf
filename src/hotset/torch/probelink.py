"""A loader's link between its policy's benefit-aware placement and the probe board.

A policy that ``wants_board`` (``quiver[placement=true]``) stays pure: the loader
times the batches of its probe windows, turns them into a record once both are
timed (``Policy.probe_record``), publishes it on the namespace's board
(:mod:`hotset.cachestore.probe_board`) and keeps it as the job's own. Before each
later epoch begins -- before the loader records the epoch's start state, so what
was applied is part of the state a checkpoint saves -- it reads the board and
gives the policy its own record, the other jobs' records and the namespace's
budget (``Policy.apply_board``). Without a shared Redis namespace there is no
board: the job places by its own probe alone (a job that gains nothing still turns
its caching off). While the job runs, its record is published again every
``ttl_s / 3`` seconds, so it outlives its lease only if the job dies; when the
loader closes, the record is withdrawn.

A resumed loader has no own record until its policy probes again: until then the
policy keeps the placement its state recorded, and the board is not read.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from hotset.cachestore.probe_board import ProbeBoard
from hotset.engine.policy import Policy

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
        policy: Policy,
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
        self._probed = False  # the current epoch's probe is published
        self._published_at = 0.0

    def before_epoch(self) -> None:
        """Before an epoch begins: give the policy the board (once the job has a probe)."""
        self._probed = False
        if self.own is None:
            return
        others = [] if self.board is None else self.board.read()
        board = [r for r in others if r.get("job") != self.job]
        self.policy.apply_board(self.own, board, budget_bytes=self.budget_bytes)

    def after_batch(self, batch_seconds: Sequence[float]) -> None:
        """After each batch is timed: publish the probe once its windows are; renew."""
        if not self._probed and self.policy.probe_batches():
            record = self.policy.probe_record(self.job, self.dataset, batch_seconds)
            if record is not None:
                self._probed = True
                self.own = dict(record)
                self._publish()
                return
        board, own = self.board, self.own
        if board is not None and own is not None and self._due(board.ttl_s / 3):
            self._publish()

    def _due(self, every_s: float) -> bool:
        return time.monotonic() - self._published_at > every_s

    def _publish(self) -> None:
        self._published_at = time.monotonic()
        if self.board is not None and self.own is not None:
            self.board.publish(self.own)

    def leave(self) -> None:
        """The loader closes: the job's record stops counting now."""
        if self.board is not None and self.own is not None:
            self.board.withdraw(self.job)
