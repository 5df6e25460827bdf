"""A failed torchrun job shows each rank's own stderr, the failing rank first.

Why: a rank of test_every_system_runs_under_torchrun_with_and_without_workers
exited with 1 in a full run, and all that was left of it was the last 3,000
characters of the job's one stderr pipe: the agent's summary and the other
rank's noise, not the failing rank's traceback. Each rank now logs to files of
its own (tests/process_support.py) and a failure prints them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from process_support import failed_ranks, run_torchrun

HERE = Path(__file__).resolve().parent


def test_a_failed_job_names_the_failing_rank_and_shows_its_whole_traceback(
    tmp_path: Path,
) -> None:
    with pytest.raises(AssertionError) as failed:
        run_torchrun([str(HERE / "rank_fail_job.py")], nproc=2, logs=tmp_path / "logs")
    message = str(failed.value)
    # first of all, the error itself: a report that cuts a long failure's middle keeps it
    assert message.startswith(
        "local rank 1 raised: ValueError: rank 1 failed on purpose, 40 frames down\n"
    ), message[:300]
    first = message.index("===== local rank 1 (exit code 1, the first failure)")
    assert message.index("===== local rank 0 (") > first  # the first failure first
    traceback = message[first:]
    assert "in rank_one_outermost_frame" in traceback  # its first frame: the whole of it
    assert "ValueError: rank 1 failed on purpose, 40 frames down" in traceback
    assert "rank 0 stopped: noise line 399" in message  # the other rank's tail too


def test_the_agents_summary_gives_each_failed_rank_and_the_first_failure() -> None:
    summary = """Failures:
[1]:
  rank      : 2 (local_rank: 0)
  exitcode  : -15 (pid: 29696)  (SIGTERM)
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 3 (local_rank: 1)
  exitcode  : 1 (pid: 29697)
"""
    assert failed_ranks(summary) == {0: (-15, False), 1: (1, True)}
    assert failed_ranks("no summary: the agent itself was killed") == {}
