"""cpu_times: the training process's CPU seconds and its descendants', kept apart."""

from __future__ import annotations

import multiprocessing
import time

from hotset.bench.cputime import cpu_times


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_childs_cpu_counts_as_descendants_and_not_as_the_main_process() -> None:
    before = cpu_times()
    child = multiprocessing.get_context("fork").Process(target=_burn, args=(0.4,))
    child.start()
    child.join()  # reaped: RUSAGE_CHILDREN holds it now
    spent = cpu_times() - before
    assert spent.descendants is not None and spent.descendants >= 0.3
    assert spent.main < 0.3
    before = cpu_times()
    _burn(0.3)
    spent = cpu_times() - before
    assert spent.main >= 0.25 and spent.descendants is not None and spent.descendants < 0.1


def test_a_live_childs_cpu_is_read_from_proc() -> None:
    parent, child_end = multiprocessing.get_context("fork").Pipe()
    before = cpu_times()

    child = multiprocessing.get_context("fork").Process(target=_burn_then_wait, args=(child_end,))
    child.start()
    parent.recv()  # burnt, still alive
    spent = cpu_times() - before
    parent.send(None)
    child.join()
    assert spent.descendants is not None and spent.descendants >= 0.3


def _burn_then_wait(conn: object) -> None:
    _burn(0.4)
    conn.send(None)  # type: ignore[attr-defined]
    conn.recv()  # type: ignore[attr-defined]
