"""A Quiver job's chunk cycle: cut at its first epoch, joined where a shared cache's jobs are.

Jobs of one shared cache follow the same chunk cycle (FAST'20 Algorithm 1): a job
started after the others joins at the chunk they load now (``getCurrentChunk``).
Where it joins is an input, given by the driver before the first epoch
(:meth:`JobCycle.join`) and saved with the policy's state, so a resume does not
ask again. The cycle itself (:class:`~hotset.policies.quiver.chunks.ChunkCycle`)
is cut lazily, once the data set's size is known, in the budget the policy gives.
"""

from __future__ import annotations

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.policies.quiver.chunks import ChunkCycle, StripedChunks


class JobCycle:
    """The job's :class:`ChunkCycle` (None until sized) and the shared step it joined at."""

    def __init__(self) -> None:
        self.cycle: ChunkCycle | None = None
        #: the step of the shared chunk cycle this job joined at (Algorithm 1's
        #: getCurrentChunk, read by the driver from a shared cache); None: never asked
        self.joined: int | None = None

    @property
    def started(self) -> bool:
        """Whether the cycle has a chunk in (or loading)."""
        return self.cycle is not None and bool(self.cycle.chunks_in)

    def get(
        self,
        planned: IntArray | None,
        *,
        layout: UnitLayout | None,
        budget: Budget,
        seed: int,
        fresh: bool = False,
    ) -> ChunkCycle:
        """The cycle, cut now in ``budget`` with the job's ``seed`` if it is not yet: the
        data set's size is the layout's, else the budget's sizes', else the planned
        order's largest id + 1. ``fresh`` deals its chunks afresh each round, unless the
        job joined a shared cycle (whose jobs must want the same chunks)."""
        if self.cycle is None:
            if layout is not None:
                n = len(layout.chunk_of)
            elif budget.sizes is not None:
                n = len(budget.sizes)
            elif planned is not None and len(planned):
                n = int(np.max(planned)) + 1
            else:
                raise HotsetError("quiver: needs sizes, a layout or a planned order")
            chunks = StripedChunks(budget, layout, n)
            self.cycle = ChunkCycle(chunks, seed=seed, fresh=fresh and self.joined is None)
            self.cycle.next_step = self.joined or 0
        # a job that joined (or a state that says it did) follows the shared fixed cycle
        self.cycle.fresh = fresh and self.joined is None
        return self.cycle

    def forget(self) -> None:
        """Drop the cycle (a new layout or budget cuts it again); the join stays."""
        self.cycle = None

    # -- the chunk cycle of a cache shared by jobs (Algorithm 1, getCurrentChunk) -------
    def awaits_join(self) -> bool:
        """True until the job has been told where the shared cycle is, and only before
        its cycle starts: a job joins once, as Algorithm 1 reads ``gChunkIndex`` once."""
        return self.joined is None and not self.started

    def join(self, step: int | None) -> None:
        """Start the chunk cycle at ``step`` (None: at 0); see ``Quiver.join_cycle``."""
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
            raise HotsetError(f"quiver: a chunk cycle step must be an int >= 0, got {step!r}")
        if self.started:
            raise HotsetError("quiver: join_cycle() after the chunk cycle started")
        self.joined = 0 if step is None else int(step)
        if self.cycle is not None:  # cut before (to size eviction groups): not started yet
            self.cycle.next_step = self.joined
            self.cycle.fresh = False  # jobs of one cycle want the same (fixed) chunks

    def step(self) -> int | None:
        """The step of the newest chunk this job loads (what a job joining now should
        join at); None before the cycle starts."""
        cycle = self.cycle
        return None if cycle is None or not cycle.chunks_in else cycle.next_step - 1
