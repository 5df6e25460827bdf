"""Cache writes in plan order across DataLoader worker processes.

Each batch plan carries a global ``seq``. A worker applies its batch's cache
writes only once ``written_upto == seq - 1`` and then sets it to ``seq``; it
reads cached ids only once ``written_upto >= wait_for``. Waits are always on
*earlier* batches, which the DataLoader handed out earlier, so nobody waits on
a batch that waits on them.

The counter lives in a two-slot shared array ``[written_upto, generation]``
created by the main process and inherited by workers (fork, or pickled while
spawning). When the main process abandons plans that will never run (a loop
that broke out of an epoch, a restored checkpoint) it bumps ``generation``
under the same lock the writers hold; a worker holding a plan of an older
generation then stops instead of writing, so abandoned plans can neither block
nor corrupt the cache.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hotset.errors import HotsetError
from hotset.torch.forksafe import as_context

_WRITTEN, _GENERATION = 0, 1
_POLL_S = 0.0002
#: how long a worker waits for an earlier batch before declaring the pipeline stuck
DEFAULT_WAIT_TIMEOUT_S = 600.0


class StalePlan(HotsetError):
    """The plan was abandoned by the main process while a worker held it."""


class Sequencer:
    """The shared ``written_upto`` counter and generation, plus the writers' lock."""

    def __init__(
        self,
        *,
        context: str | multiprocessing.context.BaseContext | None = None,
        timeout_s: float = DEFAULT_WAIT_TIMEOUT_S,
    ):
        ctx = as_context(context)
        self._lock: Any = ctx.Lock()
        self._state: Any = ctx.RawArray("q", 2)
        self.timeout_s = timeout_s

    @property
    def written_upto(self) -> int:
        return int(self._state[_WRITTEN])

    @property
    def generation(self) -> int:
        return int(self._state[_GENERATION])

    def wait_until(self, seq: int, *, generation: int, what: str) -> float:
        """Block until ``written_upto >= seq``; return seconds waited."""
        state = self._state
        if state[_WRITTEN] >= seq and state[_GENERATION] == generation:
            return 0.0
        start = time.monotonic()
        while True:
            if state[_GENERATION] != generation:
                raise StalePlan(f"{what}: plan of generation {generation} was abandoned")
            if state[_WRITTEN] >= seq:
                return time.monotonic() - start
            if time.monotonic() - start > self.timeout_s:
                raise HotsetError(
                    f"{what}: waited {self.timeout_s:g}s for batch seq {seq} to be written "
                    f"(written up to {int(state[_WRITTEN])}); a worker died or the plan was lost"
                )
            time.sleep(_POLL_S)

    @contextmanager
    def writing(self, seq: int, *, generation: int) -> Iterator[None]:
        """Hold the write turn of batch ``seq``: the body runs after ``seq - 1`` was written."""
        self.wait_until(seq - 1, generation=generation, what=f"batch seq {seq}")
        with self._lock:
            if self._state[_GENERATION] != generation:
                raise StalePlan(f"batch seq {seq}: plan of generation {generation} was abandoned")
            if self._state[_WRITTEN] != seq - 1:
                raise HotsetError(
                    f"batch seq {seq}: cache writes out of order "
                    f"(written up to {int(self._state[_WRITTEN])})"
                )
            yield
            self._state[_WRITTEN] = seq

    @contextmanager
    def abandoning(self) -> Iterator[int]:
        """Main process only: stop every worker's older plans; yields the written_upto seen."""
        with self._lock:
            self._state[_GENERATION] += 1
            yield int(self._state[_WRITTEN])

    def set_written(self, seq: int) -> None:
        """Main process only, inside :meth:`abandoning`: declare everything up to ``seq`` done."""
        self._state[_WRITTEN] = seq
