"""Run a job of real processes (torchrun, an example) so that a hang explains itself.

A job that hangs under pytest-timeout leaves nothing but the test's own stack,
and its processes (ranks, DataLoader workers) live on. Here the job runs in a
session of its own with faulthandler on; past ``timeout_s`` (kept below
pytest's limit) SIGABRT to the whole group makes every Python process in it
print each thread's stack, the group is then killed, and the failure shows
those stacks.

A torchrun job's ranks write their stdout and stderr to log files of their own
(:func:`run_torchrun`), and a failure shows each rank's stderr tail, the ranks
that failed first: on one shared pipe, cut to its last few thousand characters,
the agent's summary and the surviving rank's "lost its peer" crowded out the
traceback of the rank that actually failed.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: below pytest's per-test limit (300 s), so the dump happens here
JOB_TIMEOUT_S = 240.0
#: how much of each rank's stderr a failure shows (a traceback fits many times)
RANK_TAIL_CHARS = 12_000


def run_job(
    argv: list[str],
    *,
    cwd: Path | None = None,
    timeout_s: float = JOB_TIMEOUT_S,
    explain: Callable[[str], str] | None = None,
    headline: Callable[[str], str] | None = None,
) -> tuple[str, str]:
    """Run ``argv`` to completion; its (stdout, stderr). Fails on a non-zero exit or a hang.

    ``explain``, given the job's stderr, says more on a failure (what the job's
    processes wrote elsewhere, e.g. each rank's log); ``headline``, one line of it
    put first (the error that failed the job), so that a report which keeps only
    the head and the tail of a long failure still names it.
    """
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
        more = "" if explain is None else explain(err)
        raise AssertionError(
            f"{argv[1:]} hung for {timeout_s} s; the stacks:\n{err[-20000:]}{more}"
        ) from None
    if proc.returncode != 0:
        more = "" if explain is None else explain(err)
        first = "" if headline is None else headline(err)
        said = f"\nits stdout's tail:\n{out[-2000:]}" if out else ""
        raise AssertionError(
            f"{first}{argv[1:]} exited with {proc.returncode}:\n{err[-3000:]}{said}{more}"
        )
    return out, err


#: one failed rank in torch.distributed.elastic's summary of a failed job
_FAILURE = re.compile(
    r"rank\s*:\s*(?P<rank>\d+)\s*\(local_rank:\s*(?P<local>\d+)\)\s*"
    r"exitcode\s*:\s*(?P<code>-?\d+)"
)


def failed_ranks(agent_stderr: str) -> dict[int, tuple[int, bool]]:
    """The local ranks the agent's summary lists as failed: (exit code, the first failure).

    The summary (``ChildFailedError``) lists every failed rank, the first one
    observed under "Root Cause"; nothing is found where the agent said nothing.
    """
    head, _, root = agent_stderr.rpartition("Root Cause")
    failed: dict[int, tuple[int, bool]] = {}
    for text, first in ((head, False), (root, True)):
        for m in _FAILURE.finditer(text):
            failed[int(m["local"])] = (int(m["code"]), first)
    return failed


#: the line a Python traceback ends with (a rank's lines carry torchrun's "[rankN]: ")
_RAISED = re.compile(r"^(?:\[rank\d+\]:\s*)?(?P<error>[\w.]+(?:Error|Exception|Exit)\b.*)$", re.M)


def raised(stderr: str) -> str | None:
    """The last ``SomeError: message`` line of a process's stderr, or None."""
    found = list(_RAISED.finditer(stderr))
    return found[-1]["error"] if found else None


def first_error(run_dir: Path, agent_stderr: str) -> str:
    """``rank N raised: SomeError: ...`` for the rank that failed first, and a newline;
    "" when its log names no error."""
    failed = failed_ranks(agent_stderr)
    firsts = [r for r, (_, first) in failed.items() if first] or sorted(failed)
    for rank in firsts:
        for log in run_dir.rglob("stderr.log"):
            if log.parent.name == str(rank):
                error = raised(log.read_text(errors="replace"))
                if error is not None:
                    return f"local rank {rank} raised: {error}\n"
    return ""


def rank_logs(run_dir: Path, agent_stderr: str) -> str:
    """Each local rank's stderr tail, from its log file; failed ranks first, first failure first."""
    errs = {int(p.parent.name): p for p in run_dir.rglob("stderr.log")}
    failed = failed_ranks(agent_stderr)

    def order(rank: int) -> tuple[int, int]:
        _, first = failed.get(rank, (0, False))
        return (0 if first else 1 if rank in failed else 2, rank)

    parts = []
    for rank in sorted(errs, key=order):
        text = errs[rank].read_text(errors="replace")
        code, first = failed.get(rank, (None, False))
        status = "not listed as failed" if code is None else f"exit code {code}"
        status += ", the first failure" if first else ""
        shown = f"last {RANK_TAIL_CHARS} of {len(text)}" if len(text) > RANK_TAIL_CHARS else "all"
        parts.append(
            f"\n===== local rank {rank} ({status}): its stderr ({shown} chars), "
            f"{errs[rank]} =====\n{text[-RANK_TAIL_CHARS:]}"
        )
    if not parts:
        return f"\n(no rank logs under {run_dir})"
    return "".join(parts)


def run_torchrun(
    script_args: list[str],
    *,
    nproc: int,
    logs: Path,
    cwd: Path | None = None,
    timeout_s: float = JOB_TIMEOUT_S,
) -> dict[int, str]:
    """Run a script under ``torchrun --standalone``; each local rank's stdout, by rank.

    Each rank writes its stdout and stderr to log files of its own (``--redirects
    3``) in a new folder under ``logs`` (so one test may run several jobs): ranks
    printing to one pipe interleave mid-line, which broke line-anchored
    assertions in CI, and a failure's tail showed the agent's summary rather
    than the failing rank's traceback. A failure (or a hang) shows every rank's
    stderr tail, the rank that failed first at the top (:func:`rank_logs`).
    """
    logs.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="torchrun-", dir=logs))
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    argv += ["--nproc_per_node", str(nproc), "--log-dir", str(run_dir), "--redirects", "3"]
    run_job(
        [*argv, *script_args],
        cwd=cwd,
        timeout_s=timeout_s,
        explain=lambda err: rank_logs(run_dir, err),
        headline=lambda err: first_error(run_dir, err),
    )
    outs = {int(p.parent.name): p.read_text() for p in run_dir.rglob("stdout.log")}
    assert sorted(outs) == list(range(nproc)), sorted(run_dir.rglob("*"))
    return outs
