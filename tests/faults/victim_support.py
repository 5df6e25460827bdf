"""Victims for the fault suite (no pytest here): subprocesses in their own session.

A victim runs in its own process group, so a test can kill that group the way
Slurm, docker or ``timeout`` do, and :meth:`Victim.cleanup` kills whatever is
left of it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time

READY_TIMEOUT = 60.0


class Victim:
    """A Python subprocess in its own session that prints lines and then blocks."""

    def __init__(self, code: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def line(self) -> str:
        """The next stdout line (the victim announces itself before blocking)."""
        assert self.proc.stdout is not None
        out = self.proc.stdout.readline().strip()
        if not out:
            self.proc.wait(timeout=READY_TIMEOUT)
            assert self.proc.stderr is not None
            raise AssertionError(f"victim said nothing; stderr:\n{self.proc.stderr.read()}")
        return out

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        self.proc.wait(timeout=READY_TIMEOUT)

    def cleanup(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=READY_TIMEOUT)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rpartition(b")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in (b"Z", b"X")


_decoded = 0


def stuck_after_first_batch(data: bytes, key: str) -> int:
    """A loader decode whose reads after the first four hang (slow storage); the worker's pid.

    Here, not in a victim's own code, so a worker started by a fork server can import it.
    """
    global _decoded
    _decoded += 1
    if _decoded > 4:
        time.sleep(120)
    return os.getpid()
