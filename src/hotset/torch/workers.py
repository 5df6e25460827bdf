"""Make DataLoader workers die with the process that started them.

Why. When the main process is killed (SIGKILL, or SIGTERM with a handler that
does not exit), its DataLoader workers are orphaned: PyTorch's workers notice
only through a watchdog that polls the parent every few seconds, and a worker
blocked in a read, or in a ``get`` on the index queue with a long timeout, keeps
running for minutes, holding its mapping of the shared-memory cache (whose
pages the kernel cannot free while a worker maps them) and its file handles.
Linux can instead signal a child the moment its parent dies:
``prctl(PR_SET_PDEATHSIG, sig)``. :func:`exit_with_parent` sets it, meant to be
called first thing in a worker (``worker_init_fn``).

Caveats. The "parent" is the *thread* that forked the worker: a DataLoader
iterated from a thread that then exits takes its workers with it. With the
``forkserver`` start method the parent is the fork server, which does not exit
while its workers live; :func:`exit_with_starter` watches the main process
instead. The setting is cleared on exec and is not inherited by the worker's
own children.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
from collections.abc import Callable

__all__ = ["WorkerInit", "exit_with_parent", "exit_with_starter"]

_PR_SET_PDEATHSIG = 1


def exit_with_parent(sig: int = signal.SIGKILL, *, parent_pid: int | None = None) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies.

    Returns True when set (Linux), False where there is no such facility (a
    no-op elsewhere). SIGKILL is the default because a worker owns nothing that
    needs cleanup (the owner of shared memory is the main process) and a worker
    busy in C code could take long to act on SIGTERM.

    The parent may already be dead before the call (a race the kernel does not
    cover: the signal fires only on a death *after* ``prctl``), so afterwards
    the parent pid is checked against ``parent_pid``, or, when not given,
    against the pid of the process that started this one through
    :mod:`multiprocessing` (what DataLoader workers are); outside
    multiprocessing a parent pid of 1 counts as orphaned. If the parent is
    gone, this process sends itself ``sig`` at once.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    if prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG): {os.strerror(err)}")
    expected = parent_pid
    if expected is None:
        parent = multiprocessing.parent_process()
        expected = parent.pid if parent is not None else None
    ppid = os.getppid()
    orphaned = ppid != expected if expected is not None else ppid == 1
    if orphaned:
        os.kill(os.getpid(), sig)
    return True


def exit_with_starter(sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to this process once the process that started it exits (a thread watches).

    For a process started through a fork server, where :func:`exit_with_parent`
    cannot help: the kernel's parent is the server, and the server stays up as
    long as any process it started holds the pipe whose closing tells it its
    client is gone, which each started worker does. PyTorch's own watchdog
    compares the parent pid with the server's, so it never fires either.
    multiprocessing gives every started process a sentinel of its starter
    (readable once the starter exits); a daemon thread waits on it. Returns
    False outside a multiprocessing child.
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return False
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os.kill(os.getpid(), sig)

    threading.Thread(target=watch, name="hotset-starter-watch", daemon=True).start()
    return True


class WorkerInit:
    """The loader's ``worker_init_fn``: tie the worker to its parent, then run the user's.

    The kernel's parent-death signal follows the *thread* that forked the
    worker, so it is only set when the loader was iterated from the main
    thread (the loader records that in ``from_main_thread`` just before it
    starts workers); a DataLoader iterated from a short-lived thread keeps
    PyTorch's own watchdog alone.
    """

    def __init__(self, user_fn: Callable[[int], None] | None, *, forkserver: bool = False) -> None:
        self.user_fn = user_fn
        self.from_main_thread = True
        #: started by a fork server: the kernel's parent is the server, which outlives
        #: the main process (see exit_with_starter), so the worker watches the main one
        self.forkserver = forkserver

    def __call__(self, worker_id: int) -> None:
        if self.forkserver:
            exit_with_starter()
        elif self.from_main_thread:
            exit_with_parent()
        if self.user_fn is not None:
            self.user_fn(worker_id)
