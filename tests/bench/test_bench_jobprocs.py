"""The multi-job suites' wait: a failed job ends it at once and is named; none outlives it."""

from __future__ import annotations

import multiprocessing
import sys
import time

import pytest

from hotset.bench.jobprocs import wait_for_jobs
from hotset.errors import HotsetError


def _sleep_long() -> None:
    time.sleep(60)


def _fail() -> None:
    sys.exit(3)


def _ok() -> None:
    pass


def test_a_failed_job_is_named_and_the_others_are_killed() -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_sleep_long), ctx.Process(target=_fail)]
    for p in procs:
        p.start()
    t0 = time.monotonic()
    with pytest.raises(HotsetError, match=r"bench demo: .*job b exited with 3 \(lru\)"):
        wait_for_jobs(procs, names=["a", "b"], timeout_s=30, suite="demo", what="lru")
    assert time.monotonic() - t0 < 20  # not the sleeper's 60 s
    assert not any(p.is_alive() for p in procs)


def test_jobs_that_end_well_raise_nothing() -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_ok) for _ in range(2)]
    for p in procs:
        p.start()
    wait_for_jobs(procs, names=["0", "1"], timeout_s=30, suite="demo", what="lru")
    assert [p.exitcode for p in procs] == [0, 0]
