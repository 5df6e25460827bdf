"""CPU seconds of the training process and of the processes it started, apart.

Why apart: moving JPEG decoding from DataLoader workers to the device moves CPU time
too -- out of the workers, and partly into the training process (which now feeds
nvJPEG). A benchmark that reports one sum hides where the cost went.

How it is measured (Linux):

* the training process: ``resource.getrusage(RUSAGE_SELF)``, user + system time of
  all its threads (the loop, DataLoader's pin-memory thread, the loader's read-ahead,
  torch's own threads);
* its descendants (DataLoader workers, a fork server and what it started):
  ``RUSAGE_CHILDREN`` for those already reaped by this process, plus, for every
  descendant still alive, ``utime + stime + cutime + cstime`` from
  ``/proc/<pid>/stat`` (the last two hold its own reaped children). A process is
  counted in exactly one of the two: alive, or reaped by its parent.

Where ``/proc`` is missing the descendants' figure is None (not measurable), never 0.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuTimes", "cpu_times"]

_PROC = Path("/proc")


@dataclass(frozen=True)
class CpuTimes:
    """CPU seconds so far: this process's own, and its descendants' (None: unknown)."""

    main: float
    descendants: float | None

    def __sub__(self, other: CpuTimes) -> CpuTimes:
        kids = (
            None
            if self.descendants is None or other.descendants is None
            else max(0.0, self.descendants - other.descendants)
        )
        return CpuTimes(self.main - other.main, kids)


def _stat_fields(pid: str) -> list[str] | None:
    try:
        text = (_PROC / pid / "stat").read_text()
    except OSError:  # gone since the listing
        return None
    return text[text.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses


def _live_descendants_seconds(root: int) -> float:
    """utime + stime + cutime + cstime of every live descendant of ``root``."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir(_PROC):
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields is None:
            continue
        pid = int(entry)
        parent[pid] = int(fields[1])
        ticks[pid] = sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


def cpu_times() -> CpuTimes:
    """This process's CPU seconds and its descendants' (see the module docstring)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    kids: float | None = None
    if _PROC.is_dir():
        kids = reaped.ru_utime + reaped.ru_stime + _live_descendants_seconds(os.getpid())
    return CpuTimes(own.ru_utime + own.ru_stime, kids)
