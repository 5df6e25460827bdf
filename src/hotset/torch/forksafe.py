"""Start DataLoader workers so that none can hang before running a line.

Why
---
CPython 3.11 before 3.11.10 (gh-112275; 3.12 never had it) re-initialises the
interpreter's thread-state lock in a forked child only *after* it has used it.
If another thread of the parent held that lock at the instant of ``fork()``, the
child blocks on it forever, inside ``os.fork()``, before any of its own code
runs; PyTorch's DataLoader then waits on that worker with no timeout.

A thread holds the lock, without the GIL, while it creates a Python thread
state, which is what a C++ thread does when it must touch a Python object.
torch.distributed's gloo threads do so by themselves after every collective:
finishing a collective's work they drop the tensors Python handed it, and a
tensor whose last owner is C++ takes the GIL to free its Python object. So a
process that runs a collective (hotset's end-of-epoch importance merge, DDP's
all-reduces) and then forks workers for the next epoch races those threads.
``tests/torch/rank_systems_job.py`` (about 40 loaders with workers per rank)
hung in 3 of 52 runs on a 2-core machine, each time a worker stuck in
``PyOS_AfterFork_Child``. The other side of the race, seen with gdb in ranks
that only call ``all_gather_object``: a gloo thread in ``PyThreadState_New``,
called from ``~AsyncAllgatherWork``.

What
----
When no start method was asked for, workers would be forked (Linux's default),
torch.distributed is initialised and the Python is one of those, the loader
starts workers with ``forkserver`` instead: the fork server is a fresh
single-threaded interpreter, so the fork happens where no other thread exists.
The server preloads torch and hotset's worker modules, so after its own start
(a fresh Python importing torch: seconds, once per process) a worker starts
about as fast as a fork; the
data set is pickled to each worker, as with ``spawn``. An explicit
``multiprocessing_context`` is always kept.

Paying a start once
-------------------
A worker that is not forked from this process starts from a fresh interpreter
(``spawn``) or a fork of the server (``forkserver``), and is handed the data set
by pickle; DataLoader starts its workers afresh at every epoch. The server's own
start, a fresh Python importing torch, is most of a first batch's wait
(seconds under torchrun on a 2-core machine, against tenths of a second forked:
benchmarks/worker-start/README.md). So, for a start method that does not fork this
process, the loader keeps its workers across epochs unless told otherwise
(:func:`keeps_workers`: later epochs pay no start, and whatever the data set
imports when unpickled is imported once), and starts the fork server when the
loader is built (:func:`start_forkserver`), so that its imports overlap the
script's own set-up (the model, the optimizer, DDP) instead of the first
``next(iter(loader))``.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import sys

__all__ = [
    "as_context",
    "fork_can_deadlock",
    "keeps_workers",
    "start_forkserver",
    "start_method_name",
    "worker_start_method",
]

#: the first 3.11 release whose forked child re-initialises the lock before using it
FIXED_311 = (3, 11, 10)


def fork_can_deadlock(version: tuple[int, ...] | None = None) -> bool:
    """Whether this CPython's forked child can hang on a lock another thread held (gh-112275)."""
    v = tuple(sys.version_info[:3]) if version is None else tuple(version[:3])
    return (3, 11) <= v < FIXED_311


def as_context(
    method: str | multiprocessing.context.BaseContext | None,
) -> multiprocessing.context.BaseContext:
    """The multiprocessing context a start method name (None: the default) or a context means."""
    if isinstance(method, multiprocessing.context.BaseContext):
        return method
    return multiprocessing.get_context(method)


def start_method_name(method: str | multiprocessing.context.BaseContext | None) -> str:
    """The name of the start method workers will be started with (fixing no default)."""
    if isinstance(method, multiprocessing.context.BaseContext):
        return str(method.get_start_method())
    if method is not None:
        return method
    # the first of get_all_start_methods() is the platform's default
    chosen = multiprocessing.get_start_method(allow_none=True)
    return chosen if chosen is not None else multiprocessing.get_all_start_methods()[0]


#: what a worker imports to unpickle the loader's data set (the fetcher and the
#: parts it holds): preloaded by the fork server, a worker starts in what a fork
#: costs instead of importing torch anew
WORKER_MODULES = (
    "torch",
    "hotset.torch.fetch",
    "hotset.torch.cacheio",
    "hotset.torch.cachewrite",
    "hotset.torch.movebytes",
    "hotset.torch.pool",
    "hotset.torch.reads",
    "hotset.torch.samples",
    "hotset.torch.sequencer",
    "hotset.torch.workerseed",
)


def preload_forkserver(modules: tuple[str, ...]) -> None:
    """Add ``modules`` to what the fork server imports when it starts (kept: the user's)."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    current = list(getattr(server, "_preload_modules", ["__main__"]))
    wanted = list(dict.fromkeys([*current, *modules]))
    if wanted != current:
        multiprocessing.get_context("forkserver").set_forkserver_preload(wanted)


def _dist_initialized() -> bool:
    import torch.distributed as dist

    return bool(dist.is_available() and dist.is_initialized())


def worker_start_method(
    requested: str | multiprocessing.context.BaseContext | None, *, num_workers: int
) -> tuple[str | multiprocessing.context.BaseContext | None, str | None]:
    """The start method to give DataLoader, and why it differs from ``requested`` (or None).

    Only a default that would fork is replaced: an explicit choice, no
    workers, or a platform whose default is not ``fork`` pass through.
    """
    if requested is not None or num_workers == 0:
        return requested, None
    if start_method_name(None) != "fork":
        return requested, None
    if not fork_can_deadlock() or not _dist_initialized():
        return requested, None
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    if method == "forkserver":
        preload_forkserver(WORKER_MODULES)
    version = ".".join(str(part) for part in sys.version_info[:3])
    why = (
        f"DataLoader workers start with {method!r}, not 'fork': on Python {version} a "
        "worker forked while torch.distributed's threads finish a collective can hang "
        "before it starts (CPython gh-112275, fixed in 3.11.10). The script's entry "
        "point must sit under if __name__ == '__main__', as with spawn. Pass "
        "multiprocessing_context='fork' to fork anyway, or upgrade Python."
    )
    return method, why


#: start methods whose workers do not fork this process: each start pays an
#: interpreter's imports (spawn) or a server's fork plus the data set's pickle
_UNFORKED = ("forkserver", "spawn")


def keeps_workers(
    requested: bool | None,
    method: str | multiprocessing.context.BaseContext | None,
    *,
    num_workers: int,
) -> bool:
    """DataLoader's ``persistent_workers``: as given, else on where workers are not forked.

    Forked workers start in a few milliseconds and inherit the main process as
    it is at each epoch, so they keep being started afresh (the behaviour
    DataLoader users know); workers from a fork server or spawn are kept, as the
    module says. ``requested`` False is always kept.
    """
    if requested is not None:
        return requested
    return num_workers > 0 and start_method_name(method) in _UNFORKED


def start_forkserver(method: str | multiprocessing.context.BaseContext | None) -> bool:
    """Start the fork server now when ``method`` uses one; True when it does.

    The server is preloaded with :data:`WORKER_MODULES` (besides what the user
    asked it to preload) and started without waiting for its imports: it is
    launched by fork-and-exec, which runs no Python in the child and so is safe
    beside torch.distributed's threads, and a worker asked for later waits for
    the server to be ready. A server already running is left as it is.
    """
    if start_method_name(method) != "forkserver":
        return False
    from multiprocessing import forkserver

    preload_forkserver(WORKER_MODULES)
    forkserver.ensure_running()
    return True
