"""``hotset.bench.faults_recovery``'s hang alarm: it bounds a run and puts back the outer
timer (pytest-timeout's), which a plain ``signal.alarm(0)`` had cancelled for the rest
of the test."""

from __future__ import annotations

import signal
import time

import pytest

from hotset.bench.faults_recovery import _hang_alarm, _Hung


def test_the_alarm_raises_in_a_run_that_takes_too_long() -> None:
    with pytest.raises(_Hung), _hang_alarm(0.05):
        time.sleep(5)


def test_the_outer_timer_and_handler_come_back_less_the_time_spent() -> None:
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, _frame: fired.append(signum))
    before = signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        with _hang_alarm(10.0):
            time.sleep(0.2)
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 29.0 < remaining < 29.85  # the outer 30 s, less the 0.2 s spent inside
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        time.sleep(0.2)
        assert fired == [signal.SIGALRM]  # the outer handler is the one called again
    finally:
        signal.setitimer(signal.ITIMER_REAL, *before)
        signal.signal(signal.SIGALRM, previous)


def test_without_an_outer_timer_none_is_left_running() -> None:
    before = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        with _hang_alarm(10.0):
            pass
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, *before)
