"""Wait for a suite's job processes: one failing stops the rest, none outlives the suite.

The multi-job suites start their jobs at a barrier; a job that fails would leave
the others waiting there until the time limit, so the first non-zero exit ends
the wait, and every job still alive is killed (only the suite's own processes).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess

from hotset.errors import HotsetError


def wait_for_jobs(
    procs: Sequence[BaseProcess], *, names: Sequence[str], timeout_s: float, suite: str, what: str
) -> None:
    """Wait until every process in ``procs`` (already started) ends, one fails or
    ``timeout_s`` passes; a HotsetError names each job that exited non-zero."""
    deadline = time.monotonic() + timeout_s
    try:
        while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
            if any(p.exitcode for p in procs):
                break  # one failed: the rest would wait for it at the barrier
            time.sleep(0.2)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()  # only this suite's own job processes
            p.join()
    ended = zip(names, procs, strict=True)
    failed = [f"job {name} exited with {p.exitcode}" for name, p in ended if p.exitcode]
    if failed:
        raise HotsetError(f"bench {suite}: {'; '.join(failed)} ({what})")
