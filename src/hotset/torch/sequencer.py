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

A process may die holding the writers' lock: the OOM killer or a SIGKILL
takes a worker in the middle of its write turn, and a POSIX semaphore is not
released with its holder. So the lock is never waited on blindly: it is taken
in short timed attempts, the holder's pid is kept in the shared state, and
between attempts the waiter looks whether the holder still lives. A worker
that finds it dead stops with a :class:`HolderDied` error (the loader reports
the dead worker; its batch will never be written). The main process, which
must stay able to abandon plans and close, replaces the lock by a fresh one
once the holder is dead: every worker still holding a reference to the old one
has a plan of the old generation, which the same call abandons, and workers
started later receive the new lock.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hotset.errors import HotsetError, HotsetRuntimeError
from hotset.liveness import owner_state
from hotset.torch.forksafe import as_context

_WRITTEN, _GENERATION, _HOLDER = 0, 1, 2
_POLL_S = 0.0002
#: one timed attempt at the writers' lock; between attempts the holder's life is checked
_LOCK_POLL_S = 0.05
#: how long a worker waits for an earlier batch before declaring the pipeline stuck
DEFAULT_WAIT_TIMEOUT_S = 600.0


class StalePlan(HotsetRuntimeError):
    """The plan was abandoned by the main process while a worker held it."""


class HolderDied(HotsetRuntimeError):
    """The process holding the writers' lock died in its turn; its batch is lost."""


def process_dead(pid: int) -> bool:
    """Whether ``pid`` has certainly exited (a zombie counts: it will never release)."""
    return owner_state(pid, 0, 0)[0] == "dead"


class Sequencer:
    """The shared ``written_upto`` counter and generation, plus the writers' lock."""

    def __init__(
        self,
        *,
        context: str | multiprocessing.context.BaseContext | None = None,
        timeout_s: float = DEFAULT_WAIT_TIMEOUT_S,
    ):
        ctx = as_context(context)
        self._ctx: multiprocessing.context.BaseContext | None = ctx
        self._lock: Any = ctx.Lock()
        #: [written_upto, generation, pid holding the lock (0: none)]
        self._state: Any = ctx.RawArray("q", 3)
        self.timeout_s = timeout_s

    @property
    def written_upto(self) -> int:
        return int(self._state[_WRITTEN])

    @property
    def generation(self) -> int:
        return int(self._state[_GENERATION])

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_ctx")  # a context does not pickle; only the main process replaces the lock
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._ctx = None

    def _acquire(self, *, generation: int | None, what: str) -> None:
        """Take the writers' lock, never waiting on a dead holder (see the module).

        ``generation`` is a worker's plan generation (it stops once that is
        abandoned); None is the main process, which replaces a lock whose holder died.
        """
        state = self._state
        while not self._lock.acquire(timeout=_LOCK_POLL_S):
            if generation is not None and state[_GENERATION] != generation:
                raise StalePlan(f"{what}: plan of generation {generation} was abandoned")
            holder = int(state[_HOLDER])
            if not holder or not process_dead(holder):
                continue
            if generation is not None:
                raise HolderDied(
                    f"{what}: process {holder} died in its cache-write turn (killed, or "
                    "out of memory); its batch will never be written"
                )
            assert self._ctx is not None, "only the main process replaces the lock"
            self._lock = self._ctx.Lock()
        state[_HOLDER] = os.getpid()

    def _release(self) -> None:
        self._state[_HOLDER] = 0
        self._lock.release()

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
        what = f"batch seq {seq}"
        self.wait_until(seq - 1, generation=generation, what=what)
        self._acquire(generation=generation, what=what)
        try:
            if self._state[_GENERATION] != generation:
                raise StalePlan(f"{what}: plan of generation {generation} was abandoned")
            if self._state[_WRITTEN] != seq - 1:
                raise HotsetError(
                    f"{what}: cache writes out of order "
                    f"(written up to {int(self._state[_WRITTEN])})"
                )
            yield
            self._state[_WRITTEN] = seq
        finally:
            self._release()

    @contextmanager
    def abandoning(self) -> Iterator[int]:
        """Main process only: stop every worker's older plans; yields the written_upto seen."""
        self._acquire(generation=None, what="abandoning plans")
        try:
            self._state[_GENERATION] += 1
            yield int(self._state[_WRITTEN])
        finally:
            self._release()

    def set_written(self, seq: int) -> None:
        """Main process only, inside :meth:`abandoning`: declare everything up to ``seq`` done."""
        self._state[_WRITTEN] = seq
