"""A store wrapper that lets reads survive transient faults.

Why
---
Shared storage fails now and then for reasons that go away on their own: a
dropped connection, a throttled request, an NFS hiccup, a read that never
answers. Without this wrapper one such error in a multi-day run stops training
(the DataLoader re-raises it), and a read that hangs hangs the whole job when
``num_workers=0``. :class:`RetryingStore` retries the transient ones with
exponential backoff and full jitter (so many workers that failed together do not
retry together), bounds the time spent on one read, and turns whatever does
escape into a :class:`~hotset.errors.StorageError` naming the key and the store.

What is transient
-----------------
Any :class:`OSError` (``ConnectionError`` and ``TimeoutError`` included) except
those that say the key is not there or not allowed: ``FileNotFoundError``,
``PermissionError``, ``IsADirectoryError`` and ``NotADirectoryError`` would give
the same answer on every retry, so they fail at once. A
:class:`~hotset.errors.HotsetError` (a store's own "no such key", a bad key)
already names its culprit and passes through unchanged; any other exception is a
programming error and surfaces as is.

Time limits
-----------
``deadline_s`` bounds one logical read, attempts and backoff sleeps together: no
retry starts, and no backoff sleep is begun, that would end past it.
``timeout_s`` bounds one attempt: when set, each attempt runs on a daemon thread
and the caller stops waiting after ``timeout_s`` (or what is left of the
deadline), abandons the attempt (Python cannot stop a thread; the stuck one is a
daemon, so it never keeps the process alive) and retries. Without ``timeout_s``
a read runs in the calling thread, which costs nothing extra, but then a read
that never returns is not abandoned: set ``timeout_s`` for stores that can hang.
"""

from __future__ import annotations

import math
import os
import queue
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from hotset.errors import HotsetError, StorageError
from hotset.storage.base import StatsCounter, Store, StoreStats
from hotset.storage.ranges import Range, range_requests, read_ranges

T = TypeVar("T")

#: errors that would repeat on every retry: the key is absent or not allowed
PERMANENT_ERRORS: tuple[type[OSError], ...] = (
    FileNotFoundError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)


def is_transient(exc: BaseException) -> bool:
    """Whether a retry of the request that raised ``exc`` may succeed."""
    return isinstance(exc, OSError) and not isinstance(exc, PERMANENT_ERRORS)


def _check_seconds(name: str, value: object, *, allow_none: bool, allow_zero: bool) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HotsetError(f"{name}: expected a number of seconds, got {value!r}")
    number = float(value)
    if math.isnan(number) or math.isinf(number) or number < 0 or (number == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise HotsetError(f"{name}: must be a finite number {bound}, got {value!r}")
    return number


class _DaemonRunner:
    """Runs calls on daemon threads, reusing idle ones, so a caller can stop waiting.

    Not a ``ThreadPoolExecutor``: its threads are joined at interpreter exit, so
    one hung read would keep a finished training job from exiting. A thread stuck
    in an abandoned read stays stuck; new threads are started while none is idle,
    so at most (reads in flight + reads abandoned) threads exist.
    """

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        fut: Future[T] = Future()
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # that idle thread takes this task
        self._tasks.put((fut, fn))
        if start:
            threading.Thread(target=self._work, name="hotset-retry-read", daemon=True).start()
        return fut

    def _work(self) -> None:
        while True:
            fut, fn = self._tasks.get()
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as exc:  # handed to the waiting caller
                    fut.set_exception(exc)
            del fut, fn
            with self._lock:
                self._idle += 1


class RetryingStore:
    """Wrap ``inner`` so transient read errors are retried and hung reads abandoned.

    ``retries`` (default 8; kept as :attr:`max_retries`) is how many times one
    read may be retried after its first attempt; ``deadline_s`` (default 60) bounds a read's total time;
    ``timeout_s`` (default ``None``: off) bounds one attempt (see the module
    docstring). Retry ``k`` (from 0) waits a uniform random time in
    ``[0, min(max_backoff_s, backoff_s * 2**k)]`` first ("full jitter"); the
    random source is seeded by ``seed`` and the process id, so runs repeat while
    worker processes still spread out. ``sleep`` and ``clock`` are injectable
    for tests (pass picklable callables, such as the ``time`` module's, if the
    store goes to DataLoader worker processes).

    ``read_many`` asks the inner store for the whole batch once; if that fails
    transiently it reads the keys one by one, each with its own retries, since
    retrying a whole batch where each key fails independently rarely succeeds.
    ``size`` and ``exists`` are retried the same way; ``write`` and
    ``list_keys`` pass straight through (hotset writes only when building a
    dataset, where a failure should be seen, and a listing cannot be resumed).

    :meth:`stats` counts logical reads (one per key delivered, its bytes once,
    wall seconds including retries and backoff); failed attempts are counted
    apart in :attr:`retries`, :attr:`timeouts` and :attr:`failures`, so the read
    count still means "samples read" and the inner store's own counters still
    show every attempt.
    """

    def __init__(
        self,
        inner: Store,
        *,
        retries: int = 8,
        deadline_s: float = 60.0,
        timeout_s: float | None = None,
        backoff_s: float = 0.05,
        max_backoff_s: float = 5.0,
        seed: int = 0,
        sleep: Callable[[float], object] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(inner, Store):
            raise HotsetError(f"inner: expected a Store, got {inner!r:.80}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise HotsetError(f"retries: must be an integer >= 0, got {retries!r}")
        deadline = _check_seconds("deadline_s", deadline_s, allow_none=False, allow_zero=False)
        timeout = _check_seconds("timeout_s", timeout_s, allow_none=True, allow_zero=False)
        backoff = _check_seconds("backoff_s", backoff_s, allow_none=False, allow_zero=True)
        max_backoff = _check_seconds(
            "max_backoff_s", max_backoff_s, allow_none=False, allow_zero=True
        )
        assert deadline is not None and backoff is not None and max_backoff is not None
        if max_backoff < backoff:
            raise HotsetError(
                f"max_backoff_s: must be >= backoff_s ({backoff_s!r}), got {max_backoff_s!r}"
            )
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise HotsetError(f"seed: expected an integer, got {seed!r}")
        if not callable(sleep):
            raise HotsetError(f"sleep: expected a callable(seconds), got {sleep!r}")
        if not callable(clock):
            raise HotsetError(f"clock: expected a callable() -> seconds, got {clock!r}")
        self.inner = inner
        self.max_retries = retries
        self.deadline_s = deadline
        self.timeout_s = timeout
        self.backoff_s = backoff
        self.max_backoff_s = max_backoff
        self.seed = seed
        self._sleep = sleep
        self._clock = clock
        self._setup()

    def _setup(self) -> None:
        """Per-process state: counters, the jitter source, the daemon threads."""
        self._stats = StatsCounter()
        self._lock = threading.Lock()
        self._retries = 0
        self._timeouts = 0
        self._failures = 0
        self._pid = os.getpid()
        self._rng = random.Random(f"{self.seed}:{self._pid}")
        self._runner: _DaemonRunner | None = None

    # Locks, threads and counters do not cross a process boundary: a worker
    # process counts its own retries, like StatsCounter does for reads.
    def __getstate__(self) -> dict[str, Any]:
        keep = (
            "inner",
            "max_retries",
            "deadline_s",
            "timeout_s",
            "backoff_s",
            "max_backoff_s",
            "seed",
            "_sleep",
            "_clock",
        )
        return {name: self.__dict__[name] for name in keep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()

    def _fresh_process(self) -> None:
        """A forked worker inherits no threads and should not share the parent's jitter."""
        if self._pid != os.getpid():
            self._setup()

    # -- counters ------------------------------------------------------------

    @property
    def retries(self) -> int:
        """Failed attempts that were retried (timeouts included), in this process."""
        with self._lock:
            return self._retries

    @property
    def timeouts(self) -> int:
        """Attempts abandoned after ``timeout_s``, in this process."""
        with self._lock:
            return self._timeouts

    @property
    def failures(self) -> int:
        """Reads that gave up and raised :class:`StorageError`, in this process."""
        with self._lock:
            return self._failures

    def retry_stats(self) -> dict[str, int]:
        """``retries``, ``timeouts`` and ``failures`` in one consistent snapshot."""
        with self._lock:
            return {
                "retries": self._retries,
                "timeouts": self._timeouts,
                "failures": self._failures,
            }

    def stats(self) -> StoreStats:
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        """Zero the read counters and the retry counters (the inner store keeps its own)."""
        self._stats.reset()
        with self._lock:
            self._retries = self._timeouts = self._failures = 0

    # -- the retry loop ------------------------------------------------------

    def _attempt(self, fn: Callable[[], T], wait: float | None) -> T:
        """One attempt; with a ``wait`` limit it runs on a daemon thread we may abandon."""
        if wait is None:
            return fn()
        if self._runner is None:
            self._runner = _DaemonRunner()
        fut = self._runner.submit(fn)
        try:
            return fut.result(timeout=wait)
        except FutureTimeout:
            with self._lock:
                self._timeouts += 1
            raise TimeoutError(f"no answer within {wait:.3g} s; attempt abandoned") from None

    def _call(self, what: str, key: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` until it succeeds, fails permanently, or retries/deadline run out."""
        self._fresh_process()
        start = self._clock()
        end = start + self.deadline_s
        attempt = 0
        while True:
            wait = None
            if self.timeout_s is not None:
                wait = max(0.0, min(self.timeout_s, end - self._clock()))
            try:
                return self._attempt(fn, wait)
            except HotsetError:
                raise
            except OSError as exc:
                attempt += 1
                elapsed = self._clock() - start
                if not is_transient(exc):
                    why = "a permanent error, not retried"
                elif attempt > self.max_retries:
                    why = f"gave up after {attempt} attempts (retries={self.max_retries})"
                else:
                    cap = min(self.max_backoff_s, self.backoff_s * 2.0 ** (attempt - 1))
                    delay = self._rng.uniform(0.0, cap)
                    if self._clock() + delay < end:
                        with self._lock:
                            self._retries += 1
                        self._sleep(delay)
                        continue
                    why = (
                        f"gave up after {attempt} attempts: the next would pass "
                        f"deadline_s={self.deadline_s:g}"
                    )
                with self._lock:
                    self._failures += 1
                raise StorageError(
                    f"{what} {key!r} from {self.inner!r} failed ({why}, {elapsed:.3g} s): "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

    # -- the Store protocol --------------------------------------------------

    def read(self, key: str) -> bytes:
        t0 = time.perf_counter()
        data = self._call("reading", key, lambda: self.inner.read(key))
        self._stats.add_read(len(data), time.perf_counter() - t0)
        return data

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        """The inner store's batched read once; on a transient error, key by key with retries."""
        keys = list(keys)
        if not keys:
            return []
        self._fresh_process()
        t0 = time.perf_counter()
        wait = self.timeout_s
        try:
            datas = self._attempt(lambda: self.inner.read_many(keys), wait)
        except HotsetError:
            raise
        except OSError as exc:
            if not is_transient(exc):
                with self._lock:
                    self._failures += 1
                where = repr(keys[0]) if len(keys) == 1 else f"{keys[0]!r} and {len(keys) - 1} more"
                raise StorageError(
                    f"reading {where} from {self.inner!r} failed (a permanent error, "
                    f"not retried): {type(exc).__name__}: {exc}"
                ) from exc
            with self._lock:
                self._retries += 1
            return [self.read(key) for key in keys]  # each counted by read()
        self._stats.add_read(sum(map(len, datas)), time.perf_counter() - t0, count=len(datas))
        return datas

    def read_ranges(self, key: str, ranges: Sequence[Range]) -> list[bytes]:
        """The inner store's ranged read (:mod:`hotset.storage.ranges`), retried as a read."""
        t0 = time.perf_counter()
        parts = self._call("reading", key, lambda: read_ranges(self.inner, key, ranges))
        self._stats.add_read(sum(map(len, parts)), time.perf_counter() - t0)
        return parts

    def range_requests(self, ranges: Sequence[Range]) -> int:
        """The inner store's requests for a ranged read (a retry's are counted in :attr:`retries`)."""
        return range_requests(self.inner, ranges)

    def size(self, key: str) -> int:
        return self._call("sizing", key, lambda: self.inner.size(key))

    def exists(self, key: str) -> bool:
        return self._call("checking", key, lambda: self.inner.exists(key))

    def write(self, key: str, data: bytes) -> None:
        self.inner.write(key, data)

    def list_keys(self) -> Iterable[str]:
        return self.inner.list_keys()

    def __repr__(self) -> str:
        timeout = "None" if self.timeout_s is None else f"{self.timeout_s:g}"
        return (
            f"RetryingStore({self.inner!r}, retries={self.max_retries}, "
            f"deadline_s={self.deadline_s:g}, timeout_s={timeout})"
        )
