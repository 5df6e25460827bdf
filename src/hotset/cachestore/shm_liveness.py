"""Processes that die while they use a segment: the writer lock, writer liveness, SIGTERM.

Writers (puts, deletes, clear) take a POSIX record lock on the segment
(:func:`write_lock`), so one process writes at a time; record locks belong to a
process, are not inherited by fork, and are released by the kernel when a
process dies, so a worker killed mid-write cannot deadlock the others. A header
field names the writer in progress; the next writer that finds it set repairs
the index (its ``repair`` callback: invalidate the torn slot, rebuild the free
table from the slots). Readers take no lock; one that finds a slot held by a
writer asks :func:`writer_alive` before it waits any longer.

The owner unlinks its segment on SIGTERM too: creating an owning cache in the
main thread installs a SIGTERM handler that raises ``SystemExit(143)`` (so
``finally`` blocks, ``atexit`` and the finalizers run), but only where SIGTERM
still has its default action; a handler the application (or a framework such as
Lightning) installed is left alone, and then cleanup is up to that handler
exiting normally. A forked child that inherits the handler restores the default
action and dies of the signal as before. What no handler survives (SIGKILL of
the whole process group) is reclaimed later by :mod:`hotset.cachestore.shm_gc`,
which knows owners by the identity in the segment's name and header.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import threading
from collections.abc import Callable, Iterator

from hotset.cachestore.shm_layout import H_WRITER
from hotset.cachestore.shm_segment import Segment

# One writer at a time *within* a process too: record locks do not exclude
# threads of the same process (or two handles in one process).
_PROCESS_LOCKS: dict[str, threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


def process_lock(name: str) -> threading.Lock:
    """The lock that serialises this process's threads on segment ``name``."""
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(name, threading.Lock())


def _reset_process_locks_after_fork() -> None:
    # A lock held by another thread at fork time would never be released in the child.
    global _PROCESS_LOCKS_GUARD
    _PROCESS_LOCKS_GUARD = threading.Lock()
    _PROCESS_LOCKS.clear()


os.register_at_fork(after_in_child=_reset_process_locks_after_fork)


@contextlib.contextmanager
def write_lock(seg: Segment, *, repair: Callable[[Segment], None]) -> Iterator[Segment]:
    """Hold the segment for writing; ``repair`` it first if a writer died mid-write.

    The writer marker is cleared only on success: an exception leaves it set,
    so the next writer repairs whatever was half done.
    """
    fd: int = seg.shm._fd  # type: ignore[attr-defined]
    with process_lock(seg.name):
        fcntl.lockf(fd, fcntl.LOCK_EX)
        try:
            if int(seg.header[H_WRITER]) != 0:
                repair(seg)
            seg.header[H_WRITER] = os.getpid()
            yield seg
            seg.header[H_WRITER] = 0
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN)


def writer_alive(seg: Segment) -> bool:
    """Whether the writer the header names may still finish (a reader keeps waiting)."""
    pid = int(seg.header[H_WRITER])
    if pid == 0:
        return True  # between two writes; the counter will settle
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_SIGTERM_HANDLER_PID = 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM -> SystemExit in the process that installed it, so exit cleanup runs.

    A forked child (a DataLoader worker) inherits Python-level handlers; there
    the default action is restored and the signal re-sent, so workers still die
    of SIGTERM exactly as they would without hotset.
    """
    if os.getpid() != _SIGTERM_HANDLER_PID:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise SystemExit(128 + signum)


def install_sigterm_cleanup() -> None:
    """Make SIGTERM unwind the owner so its segments are unlinked (see module docstring).

    Only from the main thread (Python's rule for handlers) and only over the
    default action: a handler someone else installed, or SIG_IGN, is theirs.
    """
    global _SIGTERM_HANDLER_PID
    if os.getpid() == _SIGTERM_HANDLER_PID:
        return
    if threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(ValueError, OSError):
        current = signal.getsignal(signal.SIGTERM)
        if current is _exit_on_sigterm:
            # Inherited by fork from an owner: this process now owns a cache itself.
            _SIGTERM_HANDLER_PID = os.getpid()
        elif current is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
            _SIGTERM_HANDLER_PID = os.getpid()
