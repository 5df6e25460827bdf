"""``hotset.torch.workerdeath``: a worker that dies holding a lock it shares with the main
process does not hang the iterator's shutdown."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from typing import Any

from torch.utils.data import DataLoader

from hotset.torch.workerdeath import WorkerWatch


def _hold_and_die(event: Any) -> None:
    """What a worker SIGKILLed inside ``done_event.is_set()`` leaves: the lock held."""
    event._cond.acquire()
    os.kill(os.getpid(), signal.SIGKILL)


def _iterator() -> Any:
    loader = DataLoader(list(range(64)), batch_size=4, num_workers=2,
                        multiprocessing_context="fork")  # fmt: skip
    it = iter(loader)
    next(it)  # the workers are up
    return it


def _shuts_down(it: Any, within_s: float) -> bool:
    done = threading.Event()

    def shutdown() -> None:
        it._shutdown_workers()
        done.set()

    threading.Thread(target=shutdown, daemon=True).start()
    return done.wait(within_s)


def test_a_lock_held_by_a_dead_process_no_longer_hangs_the_shutdown() -> None:
    it = _iterator()
    watch = WorkerWatch(it)
    event = it._workers_done_event
    holder = multiprocessing.get_context("fork").Process(target=_hold_and_die, args=(event,))
    holder.start()
    holder.join(30)
    assert holder.exitcode == -signal.SIGKILL
    assert not event._cond.acquire(True, 0.2)  # held for ever: torch's set() would wait
    assert watch.unblock_shutdown() is True
    assert it._workers_done_event is not event
    assert _shuts_down(it, within_s=60)
    assert all(not w.is_alive() for w in it._workers)


def test_a_free_lock_leaves_the_shutdown_as_torch_made_it() -> None:
    it = _iterator()
    event = it._workers_done_event
    assert WorkerWatch(it).unblock_shutdown() is False
    assert it._workers_done_event is event
    assert _shuts_down(it, within_s=60)
    assert event.is_set()  # torch's own event told its workers


def test_a_watch_without_workers_has_nothing_to_unblock() -> None:
    assert WorkerWatch(None).unblock_shutdown() is False
