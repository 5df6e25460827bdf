"""The write-turn lock never hangs on a process that died holding it (real processes)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

import pytest

from hotset.torch.sequencer import HolderDied, Sequencer

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forks real processes")

CTX = multiprocessing.get_context("fork")


def _die_in_turn(seq: Sequencer, ready: Any) -> None:
    """A worker that takes batch 1's write turn and never leaves it."""
    with seq.writing(1, generation=0):
        ready.set()
        time.sleep(120)


def _write_turn(seq: Sequencer, turn: int, generation: int, out: Any) -> None:
    try:
        with seq.writing(turn, generation=generation):
            out.put("wrote")
    except HolderDied as exc:
        out.put(f"HolderDied: {exc}")


def _killed_holder(seq: Sequencer) -> int:
    ready = CTX.Event()
    holder = CTX.Process(target=_die_in_turn, args=(seq, ready))
    holder.start()
    assert ready.wait(30), "the holder never took its turn"
    assert holder.pid is not None
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(30)
    return holder.pid


def test_main_process_abandons_past_a_dead_holder_and_the_lock_works_again() -> None:
    seq = Sequencer(context="fork")
    _killed_holder(seq)
    start = time.monotonic()
    with seq.abandoning() as written:  # hung forever before: the semaphore stayed taken
        seq.set_written(written)
    assert time.monotonic() - start < 5
    assert seq.generation == 1
    # A worker started afterwards gets the fresh lock and writes its turn.
    out = CTX.Queue()
    worker = CTX.Process(target=_write_turn, args=(seq, 1, 1, out))
    worker.start()
    assert out.get(timeout=30) == "wrote"
    worker.join(30)
    assert seq.written_upto == 1


def test_a_worker_waiting_on_a_dead_holder_stops_with_an_error() -> None:
    seq = Sequencer(context="fork")
    dead = _killed_holder(seq)
    out = CTX.Queue()
    waiter = CTX.Process(target=_write_turn, args=(seq, 1, 0, out))
    waiter.start()
    said = out.get(timeout=30)
    waiter.join(30)
    assert said.startswith("HolderDied") and f"process {dead} died" in said, said
