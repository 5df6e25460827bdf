"""A DataLoader worker that dies is a HotsetError naming it, wherever torch notices first.

torch notices a dead worker in one of several places, and each said so differently:

* its **SIGCHLD handler** (``torch.utils.data._utils.signal_handling``) raises
  ``RuntimeError("DataLoader worker (pid 12) is killed by signal: Killed.")`` in the
  main thread at whatever line it is running when the signal arrives. In a training
  loop that is mostly the user's own step, outside the loader: 29 of 37 kills reached
  the user as that raw RuntimeError (the issue's count), which no ``try`` in the
  loader could catch;
* the iterator's own check, after waiting on its queue for 5 s: ``RuntimeError(
  "DataLoader worker (pid(s) 12) exited unexpectedly")``;
* taking a batch the worker had queued before it died: its tensors come over the
  worker's file descriptors, and that fails with a bare ``EOFError`` or
  ``ConnectionResetError``; a truncated message can fail to unpickle too.

So the loader watches its iterator's workers (:class:`WorkerWatch`) and wraps torch's
SIGCHLD handler once per process (:func:`guard_sigchld`). A death of one of a watched
iterator's workers is never raised at a random line: it is noted, and raised by the
loader at its next ``next()`` as a :class:`~hotset.errors.HotsetError` naming the
worker, its pid and its signal or exit code. It is raised at once, as torch would,
only where the main thread is waiting inside the DataLoader iterator for a batch --
the place torch's own design raises it -- and not while the iterator runs the
loader's plan sampler, whose state a raise at a random line could leave half-updated.
Deaths of other DataLoaders' workers are raised as torch raises them. Any error that
leaves the iterator is checked the same way: if one of its workers is dead (waiting a
moment for a killed process to be seen as exited), the error is that death, named.

The watch reads the iterator's worker processes (``_workers``, an attribute
torch's multiprocessing iterator has had since 1.0); where it is missing the watch
falls back on the messages alone.
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import os
import pickle
import queue
import re
import signal
import threading
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import Any

from hotset.errors import HotsetError

__all__ = ["WorkerWatch", "guard_sigchld", "looks_like_death"]

#: torch's messages for a dead worker ("DataLoader worker (pid 12) is killed by signal:
#: Killed.", "... (pid 12) exited unexpectedly with exit code 1 ...", "(pid(s) 12, 13)")
_DEATH = re.compile(r"DataLoader worker \(pid(?:\(s\))? ([\d, ]+)\)")
#: torch's prefix of an error raised in a worker and re-raised here (user code's own)
RAISED_IN_WORKER = "in DataLoader worker process"
#: errors torch raises, or that taking a dead worker's batch raises; after one, the
#: watch waits this long for a worker to be seen dead (a SIGKILL is not instant)
_DEATH_ERRORS = (RuntimeError, OSError, EOFError, queue.Empty, pickle.UnpicklingError)
DEATH_WAIT_S = 1.0
_HOTSET_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TORCH_ITER = os.path.join("torch", "utils", "data", "dataloader.py")

_watches: weakref.WeakSet[WorkerWatch] = weakref.WeakSet()


def looks_like_death(exc: BaseException) -> bool:
    """Whether ``exc`` says a worker process is gone, by its message alone.

    torch reports a dead worker as a RuntimeError naming its pid; taking a batch a dead
    worker had queued fails with a bare EOFError or ConnectionError. An error the
    worker's own code raised (the user's ``read=``, say) arrives re-raised with torch's
    "Caught ... in DataLoader worker process" message, and is not a death.
    """
    if isinstance(exc, RuntimeError):
        return bool(_DEATH.search(str(exc)))
    if isinstance(exc, EOFError | ConnectionError):
        return RAISED_IN_WORKER not in str(exc)
    return False


def _pids_in(exc: BaseException) -> set[int]:
    found = _DEATH.search(str(exc))
    if found is None:
        return set()
    return {int(p) for p in found.group(1).replace(" ", "").split(",") if p}


def _describe(pid: int | None, code: int | None) -> str:
    """``DataLoader worker (pid 12) was killed by SIGKILL`` / ``... exited with code 1``."""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"DataLoader worker (pid {pid}) was killed by {name}"
    return f"DataLoader worker (pid {pid}) exited with code {code}"


class WorkerWatch:
    """The worker processes of one DataLoader iterator, and a death noticed among them."""

    def __init__(self, iterator: Any) -> None:
        #: torch's worker Process objects (empty without workers, or where torch has none)
        self._workers: list[Any] = list(getattr(iterator, "_workers", ()) or ())
        #: the iterator itself, for :meth:`unblock_shutdown` (weak: the watch keeps nothing alive)
        self._iterator: Any = None if iterator is None else weakref.ref(iterator)
        #: torch's error for a death its SIGCHLD handler reported while the loader could
        #: not raise it (the main thread was elsewhere); raised at the next batch
        self.noticed: BaseException | None = None
        self._waiting = False  # the main thread is inside next() of the iterator
        if self._workers:
            _watches.add(self)

    def pids(self) -> list[int]:
        """The pids of this iterator's workers (empty without workers)."""
        return [int(w.pid) for w in self._workers if w.pid is not None]

    def owns(self, pids: set[int]) -> bool:
        """Whether any of ``pids`` is one of this iterator's workers (any, without them)."""
        mine = {w.pid for w in self._workers}
        return bool(mine & pids) if mine else False

    def dead(self, wait_s: float = 0.0) -> list[str]:
        """Each worker that died (not one that exited 0 at shutdown), described; with
        ``wait_s``, first waiting that long for one to exit, if none has yet."""
        if not self._workers:
            return []
        if wait_s > 0 and all(w.exitcode is None for w in self._workers):
            with contextlib.suppress(OSError, ValueError):
                multiprocessing.connection.wait([w.sentinel for w in self._workers], wait_s)
        return [_describe(w.pid, w.exitcode) for w in self._workers if w.exitcode not in (None, 0)]

    def unblock_shutdown(self) -> bool:
        """After a death, or before kept workers start another epoch: let the iterator's
        shutdown (and reset) end even if a dead worker held the lock of its "workers done"
        event; True if the event had to be replaced.

        Every worker polls that ``multiprocessing.Event`` (taking its lock for an
        instant), and torch's shutdown sets it first. A worker SIGKILLed inside that
        instant holds the lock for ever, so the shutdown -- run at the iterator's
        ``__del__``, in whatever code collects it -- would wait for ever (the faults
        benchmark hung so, in ``gc.collect()``). If the lock cannot be had within
        ``DEATH_WAIT_S`` the iterator gets an event of its own process to set; its
        shutdown then tells the live workers to stop through their index queues and
        terminates any that do not exit, as it does already.
        """
        it = None if self._iterator is None else self._iterator()
        event = getattr(it, "_workers_done_event", None)
        cond = getattr(event, "_cond", None)
        if it is None or cond is None:
            return False
        if cond.acquire(True, DEATH_WAIT_S):
            cond.release()
            return False
        it._workers_done_event = threading.Event()
        return True

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Around ``next(iterator)``: a death noticed meanwhile may be raised at once."""
        self._waiting = threading.current_thread() is threading.main_thread()
        try:
            yield
        finally:
            self._waiting = False

    def raises_now(self, frame: FrameType | None) -> bool:
        """Whether a death may be raised in ``frame`` (where the signal interrupted the
        main thread): inside ``next()``, in torch's iterator, not in hotset's code."""
        if not self._waiting:
            return False
        while frame is not None:
            name = frame.f_code.co_filename
            if name.endswith(_TORCH_ITER):
                return True
            if name.startswith(_HOTSET_DIR):
                return False
            frame = frame.f_back
        return False

    def death_of(self, exc: BaseException) -> str | None:
        """What died, if ``exc`` (out of the iterator) comes of a dead worker; else None."""
        if not isinstance(exc, Exception) or RAISED_IN_WORKER in str(exc):
            return None
        if isinstance(exc, HotsetError):
            return None  # the loader's own (its plan sampler's), raised as it is
        dead = self.dead(DEATH_WAIT_S if isinstance(exc, _DEATH_ERRORS) else 0.0)
        if dead:
            return ", ".join(dead)
        if looks_like_death(exc):
            return str(exc).strip() or type(exc).__name__
        return None


class _Guard:
    """torch's SIGCHLD handler, wrapped: a watched iterator's dead worker is noted (see
    the module docstring); any other error of the handler is raised as it was."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        try:
            self.previous(signum, frame)
        except RuntimeError as exc:
            pids = _pids_in(exc)
            mine = [w for w in list(_watches) if w.owns(pids)]
            if not mine:
                raise
            for watch in mine:
                watch.noticed = exc
            if any(watch.raises_now(frame) for watch in mine):
                raise


def guard_sigchld() -> None:
    """Wrap the SIGCHLD handler torch installed (once per process, from the main thread;
    again if something replaced the wrapper). Without a Python handler there is nothing
    to wrap: torch installs none outside the main thread."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGCHLD"):
        return
    current = signal.getsignal(signal.SIGCHLD)
    if isinstance(current, _Guard) or not callable(current):
        return
    signal.signal(signal.SIGCHLD, _Guard(current))
