"""Run a job of real processes (torchrun, an example) so that a hang explains itself.

A job that hangs under pytest-timeout leaves nothing but the test's own stack,
and its processes (ranks, DataLoader workers) live on. Here the job runs in a
session of its own with faulthandler on; past ``timeout_s`` (kept below
pytest's limit) SIGABRT to the whole group makes every Python process in it
print each thread's stack, the group is then killed, and the failure shows
those stacks.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

#: below pytest's per-test limit (300 s), so the dump happens here
JOB_TIMEOUT_S = 240.0


def run_job(
    argv: list[str], *, cwd: Path | None = None, timeout_s: float = JOB_TIMEOUT_S
) -> tuple[str, str]:
    """Run ``argv`` to completion; its (stdout, stderr). Fails on a non-zero exit or a hang."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGABRT)
        time.sleep(3.0)  # time to write the stacks
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        raise AssertionError(
            f"{argv[1:]} hung for {timeout_s} s; the stacks:\n{err[-20000:]}"
        ) from None
    assert proc.returncode == 0, err[-3000:]
    return out, err


def run_torchrun(
    script_args: list[str], *, nproc: int, logs: Path, cwd: Path | None = None
) -> dict[int, str]:
    """Run a script under ``torchrun --standalone``; each local rank's stdout, by rank.

    Each rank writes to a log file of its own (``--redirects 1``): ranks printing
    to one pipe interleave mid-line, which broke line-anchored assertions in CI.
    Stderr stays on the pipe, so a failure still shows it.
    """
    import sys

    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    argv += ["--nproc_per_node", str(nproc), "--log-dir", str(logs), "--redirects", "1"]
    run_job([*argv, *script_args], cwd=cwd)
    outs = {int(p.parent.name): p.read_text() for p in logs.rglob("stdout.log")}
    assert sorted(outs) == list(range(nproc)), sorted(logs.rglob("*"))
    return outs
