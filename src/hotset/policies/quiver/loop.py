"""Quiver's benefit-aware placement, closed (FAST'20 §5.3): a job's state of the loop.

The paper's cache manager probes each job, decides among ``full``, ``chunks`` and
``none`` per data set from every job's benefit, turns caching off for a job that
gains nothing, and probes again from time to time. Here there is no manager:
the jobs of a namespace publish their probes on a shared board
(:mod:`hotset.coordination.probe_board`) and each applies
:func:`~hotset.policies.quiver.placement.place_job` to what it reads there, at
an epoch's start. This module is the policy's side of it, pure: what it was told
(its own probe record, the board it read, the namespace's budget) is recorded
as it was, and everything else -- the decision, whether caching is off, how
much the job may hold -- is derived from those inputs, so a checkpoint resumes
to the same decisions without asking the board again.

When a probe runs, and why over two epochs: ``t_miss`` is timed on the probe
epoch's first ``probe`` batches, planned without the cache (as ``quiver[probe=N]``
always planned them), and ``t_hit`` on the *next* epoch's first ``probe`` batches,
with the cache as the job runs it. The paper measures the second window "with the
default caching policy" once the job runs normally; the batches right after the
first window are no such thing: the cache is cold then, and each batch also loads
its share of the chunks, so a job that waits on storage measured there looks
barely faster with the cache (1.3x where its warm batches are 10x faster, in
``bench placement``). The record is complete after the second window, and the
placement is applied from the epoch after it: the first probe (epoch 0) places
the job from epoch 2 on. A re-probe starts every ``reprobe_epochs`` (>= 2) epochs
after the last probe; it lifts a job's "caching off" for its two epochs, so that
the second window measures the job with its cache, and the board is not applied
between its windows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from hotset.engine.budget import Budget
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.policies.quiver.chunks import StripedChunks
from hotset.policies.quiver.placement import (
    DataSetSpace,
    Placement,
    clean_record,
    counted,
    place_job,
    probe_result,
    record_of,
)

__all__ = ["PlacementLoop", "PlacementState", "check_open_loop", "data_set_space"]


def check_open_loop(placement: object, reprobe_epochs: object, *, probe_on: object) -> None:
    """``placement`` must be a bool; without it nothing is applied, so a re-probe would
    measure for nothing: refused rather than ignored."""
    if not isinstance(placement, bool):
        raise HotsetError(f"quiver: placement must be True or False, got {placement!r}")
    if not probe_on and reprobe_epochs not in (0, None):
        raise HotsetError(
            f"quiver: reprobe_epochs={reprobe_epochs!r} needs placement=true (a probe "
            "nobody applies changes nothing); add placement=true or leave reprobe_epochs out"
        )
    return None


class PlacementState:
    """What a Quiver job of a closed loop was told, and what follows from it."""

    def __init__(self, *, probe: int, min_benefit: float, reprobe_epochs: int) -> None:
        if probe < 2:
            raise HotsetError(
                f"quiver: placement=true needs probe >= 2 batches (a window drops its first "
                f"batch), got probe={probe}"
            )
        bad = isinstance(min_benefit, bool) or not isinstance(min_benefit, int | float)
        if bad or not min_benefit >= 1.0:
            raise HotsetError(f"quiver: min_benefit must be a number >= 1, got {min_benefit!r}")
        bad = isinstance(reprobe_epochs, bool) or not isinstance(reprobe_epochs, int)
        if bad or reprobe_epochs < 0 or reprobe_epochs == 1:
            raise HotsetError(
                f"quiver: reprobe_epochs must be 0 (never) or an int >= 2 (a probe spans two "
                f"epochs), got {reprobe_epochs!r}"
            )
        self.probe = int(probe)
        self.min_benefit = float(min_benefit)
        self.reprobe_epochs = int(reprobe_epochs)
        #: the job's batch number where the current probe's first window starts
        self.probe_start = 0
        #: the epoch that probe began in
        self.probe_epoch = 0
        #: the inputs last applied: {"own": record, "board": [records], "budget_bytes": int,
        #: "skipped": int}; ``board`` holds only the records the placement counts (cleaned,
        #: at most ``MAX_BOARD``), ``skipped`` how many others the board gave
        self.applied: dict[str, Any] | None = None
        #: derived from ``applied``: the decision
        self.placement: Placement | None = None
        #: the job admits nothing and reads everything from storage (pool hits aside)
        self.caching_off = False
        #: bytes the job may hold (two chunks); None: its whole budget
        self.cap_bytes: int | None = None
        #: ids a reset dropped, which the next batch's plan evicts
        self.drops: list[int] = []

    # -- inputs ----------------------------------------------------------------------
    def apply(
        self,
        own: Mapping[str, object] | None,
        board: Sequence[Mapping[str, object]],
        *,
        budget_bytes: int,
        epoch: int,
    ) -> bool:
        """Apply what the board says before ``epoch`` begins (``own`` None: the job's
        record as last applied, after a resume); True when the job's caching changes (on
        or off, or its cap), so the policy restarts its cache from empty. Nothing is
        applied without a record of the job's own, nor between a probe's two windows."""
        if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, int):
            raise HotsetError(f"quiver: budget_bytes must be an int, got {budget_bytes!r}")
        if own is None:
            if self.applied is None:
                return False
            own = self.applied["own"]
        own = clean_record(own)  # a bad own record fails here, naming it
        if epoch == self.probe_epoch + 1:
            return False  # the probe's second window runs with the cache as it is
        kept = counted(own, board)  # what another job's record can do is bounded here
        applied = {
            "own": own,
            "board": kept,
            "budget_bytes": int(budget_bytes),
            "skipped": len(board) - len(kept),
        }
        before = (self.caching_off, self.cap_bytes)
        self._derive(applied)
        return (self.caching_off, self.cap_bytes) != before

    def _derive(self, applied: dict[str, Any]) -> None:
        self.applied = applied
        self.placement = place_job(
            applied["own"],
            applied["board"],
            budget_bytes=applied["budget_bytes"],
            min_benefit=self.min_benefit,
        )
        self.caching_off = not self.placement.caching
        self.cap_bytes = self.placement.cap_bytes if self.placement.caching else None

    def begin_epoch(self, epoch: int, batches_done: int) -> bool:
        """At an epoch's start: True when it re-probes (its first batches skip the cache;
        a job whose caching is off caches this epoch, to measure with it)."""
        due = (
            self.reprobe_epochs > 0
            and epoch > self.probe_epoch
            and epoch - self.probe_epoch >= self.reprobe_epochs
            and batches_done > self.probe_start
        )
        if due:
            self.probe_start, self.probe_epoch = batches_done, epoch
            self.caching_off = False
        return due

    def window(self, epoch: int, epoch_first: int) -> str | None:
        """Which probe window the first ``probe`` batches of ``epoch`` are: ``miss``
        (planned without the cache), ``hit`` (the next epoch, with it) or None."""
        if epoch == self.probe_epoch and self.probe_start == epoch_first:
            return "miss"
        return "hit" if epoch == self.probe_epoch + 1 else None

    def probing(self, batch: int) -> bool:
        """Whether the job's batch number ``batch`` is one planned without the cache."""
        return self.probe_start <= batch < self.probe_start + self.probe

    def take_drops(self) -> list[int]:
        """The ids a reset dropped, once: the plan that asks evicts them."""
        drops, self.drops = self.drops, []
        return drops

    # -- the state ---------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "probe_start": self.probe_start,
            "probe_epoch": self.probe_epoch,
            "applied": self.applied,
            "caching_off": self.caching_off,
            "drops": list(self.drops),
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        for key in ("probe_start", "probe_epoch", "applied", "caching_off", "drops"):
            if key not in state:
                raise HotsetError(f"quiver state: the placement loop misses {key!r}")
        self.probe_start = int(state["probe_start"])
        self.probe_epoch = int(state["probe_epoch"])
        applied = state["applied"]
        if applied is None:
            self.applied, self.placement, self.cap_bytes = None, None, None
        else:
            own = clean_record(applied["own"])
            kept = counted(own, applied["board"])
            self._derive(
                {
                    "own": own,
                    "board": kept,
                    "budget_bytes": int(applied["budget_bytes"]),
                    "skipped": int(applied.get("skipped", 0)) + len(applied["board"]) - len(kept),
                }
            )
        # a re-probe epoch lifts the switch the inputs give: the state says which holds
        self.caching_off = bool(state["caching_off"])
        self.drops = [int(s) for s in state["drops"]]

    def summary(self) -> dict[str, Any]:
        p = self.placement
        return {
            "placement": None if p is None else p.option,
            "caching": not self.caching_off,
            "benefit": None if p is None else round(p.benefit, 4),
            "cap_bytes": self.cap_bytes,
            "probe_epoch": self.probe_epoch,
            "board_jobs": 0 if self.applied is None else len(self.applied["board"]),
            "board_skipped": 0 if self.applied is None else self.applied["skipped"],
        }


class PlacementLoop:
    """When a Quiver job plans without its cache, and what the closed loop tells it.

    ``probe`` batches from the job's start (open loop) or from each probe's start
    (``state``, the closed loop's :class:`PlacementState`; None: open loop) are
    planned as reads from storage; the closed loop may also turn caching off, cap
    the bytes the chunks are cut in, and drop what the job held.
    """

    def __init__(self, *, probe: int, state: PlacementState | None) -> None:
        self.probe = probe
        self.state = state

    def probing(self, batch: int) -> bool:
        """Whether the job's batch number ``batch`` is a probe batch (no cache)."""
        if self.state is not None:
            return self.state.probing(batch)
        return batch < self.probe

    @property
    def caching_off(self) -> bool:
        """The closed loop turned this job's caching off (§5.3): it admits nothing."""
        return self.state is not None and self.state.caching_off

    def cycle_budget(self, budget: Budget) -> Budget:
        """The budget chunks are cut in: the job's own, or two chunks' worth when the
        namespace's board gave its data set ``chunks`` (no static set beyond them)."""
        cap = None if self.state is None else self.state.cap_bytes
        if cap is None:
            return budget
        own = budget.capacity_bytes
        return replace(budget, capacity_bytes=cap if own is None else min(own, cap))

    def window(self, epoch: int, epoch_first: int) -> tuple[str, int] | None:
        """The probe window the epoch's first batches are (see ``Quiver.probe_window``)."""
        state = self.state
        if state is None:
            return None
        which = state.window(epoch, epoch_first)
        return None if which is None else (which, state.probe)

    def record(
        self,
        job: str,
        dataset: str,
        batch_seconds: Sequence[float],
        space: Callable[[], DataSetSpace],
    ) -> dict[str, str | int | float] | None:
        """A board record from the ``miss`` then ``hit`` windows' times (``probe`` batches
        each; ``space()`` asked only then); None when they are fewer."""
        if self.state is None or len(batch_seconds) < 2 * self.state.probe:
            return None
        n = self.state.probe
        probe = probe_result(job, dataset, batch_seconds[: 2 * n], probe=n)
        return record_of(probe, space())

    def take_drops(self) -> list[int]:
        """The ids a reset dropped, once (none in the open loop)."""
        return self.state.take_drops() if self.state is not None else []

    def summary(self) -> dict[str, Any]:
        return {} if self.state is None else self.state.summary()


def data_set_space(budget: Budget, layout: UnitLayout | None, n: int) -> DataSetSpace:
    """The data set's bytes and its chunk's (§5.3: "a fixed size chunk ... or 10% of the
    data set"), as the job's budget cuts them, short of the whole data set: a job whose
    budget holds it all cycles one chunk, which is no price for two chunks."""
    sizes = budget.sizes
    total = n if sizes is None else int(np.asarray(sizes[:n]).sum())
    own = budget.capacity_bytes
    short = max(1, total - 1) if own is None else min(own, max(1, total - 1))
    chunks = StripedChunks(replace(budget, capacity_bytes=short), layout, n)
    return DataSetSpace(total, max(chunks.chunk_bytes))
