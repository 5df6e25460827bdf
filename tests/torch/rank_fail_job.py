"""A torchrun job whose local rank 1 fails deep in a call stack (run by tests, no pytest).

Rank 1 raises from 40 frames down; rank 0 waits, and when the agent stops it
writes much to stderr, as a rank whose peer died writes its own long traceback
after the one that failed. On one shared pipe cut to its tail, that buried rank
1's traceback. The test checks that a failure shows all of rank 1's traceback
and names rank 1 as the one that failed first.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from types import FrameType

DEPTH = 40


def rank_one_outermost_frame() -> None:
    """The traceback's first frame: shown only when the whole traceback is."""
    _down(DEPTH)


def _down(depth: int) -> None:
    if depth == 0:
        raise ValueError("rank 1 failed on purpose, 40 frames down")
    _down(depth - 1)


def _stopped(signum: int, _frame: FrameType | None) -> None:
    """Rank 0's answer to the agent's SIGTERM: a long stderr, then the exit."""
    for line in range(400):
        print(f"rank 0 stopped: noise line {line} that is not the failure", file=sys.stderr)
    sys.stderr.flush()
    raise SystemExit(128 + signum)


def main() -> None:
    if os.environ["LOCAL_RANK"] == "1":
        rank_one_outermost_frame()
    signal.signal(signal.SIGTERM, _stopped)
    time.sleep(60.0)  # the agent stops it once rank 1 has failed


if __name__ == "__main__":
    main()
