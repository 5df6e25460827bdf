"""How long a throttled "remote" store takes, really and in modeled time.

The point of :class:`~hotset.storage.throttled.ThrottledStore` having two clocks
is that the simulator's modeled seconds can be trusted to mean wall seconds. This
benchmark reads the same small samples from the same number of threads under both
clocks and reports both figures side by side, with the analytic lower bound.
"""

from __future__ import annotations

import math
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hotset.errors import HotsetError
from hotset.storage.fsspec_store import FsspecStore
from hotset.storage.throttled import BYTES_PER_MB, Clock, ThrottledStore


def _check_count(name: str, value: int, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise HotsetError(f"{name}: must be an integer >= {minimum}, got {value!r}")


def _drive(store: ThrottledStore, keys: list[str], threads: int) -> float:
    """Read every key once, one request at a time, from ``threads`` threads; wall seconds."""

    def worker(share: list[str]) -> int:
        return sum(len(store.read(k)) for k in share)

    shares = [keys[i::threads] for i in range(threads)]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        start = time.perf_counter()
        total = sum(pool.map(worker, shares))
        wall = time.perf_counter() - start
    if total != store.stats().bytes_read:
        raise AssertionError("throttled store lost count of bytes")
    return wall


def run_throttled(
    *,
    n: int = 2000,
    threads: int = 8,
    latency_ms: float = 2.0,
    concurrency: int = 4,
    bandwidth_mb_s: float = 1000.0,
    sample_bytes: int = 3072,
) -> dict[str, Any]:
    """Read ``n`` samples of ``sample_bytes`` through a throttled in-memory store.

    Returns wall seconds under the real clock, modeled seconds under the virtual
    clock, the analytic lower bound ``max(ceil(n/c) * latency, bytes / bandwidth)``
    and throughputs; the two clocks should agree to within sleep jitter.
    """
    _check_count("n", n, minimum=1)
    _check_count("threads", threads, minimum=1)
    _check_count("sample_bytes", sample_bytes, minimum=0)
    url = f"memory://hotset-bench-{uuid.uuid4().hex}"
    inner = FsspecStore(url, create=True)
    keys = [f"s{i:07d}" for i in range(n)]
    try:
        payload = bytes(sample_bytes)
        for key in keys:
            inner.write(key, payload)
        results: dict[str, Any] = {
            "n": n,
            "threads": threads,
            "latency_ms": latency_ms,
            "concurrency": concurrency,
            "bandwidth_mb_s": bandwidth_mb_s,
            "sample_bytes": sample_bytes,
            "total_bytes": n * sample_bytes,
            "lower_bound_seconds": max(
                math.ceil(n / concurrency) * latency_ms / 1000.0,
                n * sample_bytes / (bandwidth_mb_s * BYTES_PER_MB),
            ),
        }
        clocks: tuple[Clock, ...] = ("real", "virtual")
        for clock in clocks:
            store = ThrottledStore(
                inner,
                latency_ms=latency_ms,
                bandwidth_mb_s=bandwidth_mb_s,
                max_concurrency=concurrency,
                clock=clock,
            )
            wall = _drive(store, keys, threads)
            seconds = wall if clock == "real" else store.modeled_seconds
            stats = store.stats()
            results[clock] = {
                "seconds": seconds,
                "wall_seconds": wall,
                "samples_per_s": n / seconds if seconds > 0 else math.inf,
                "mb_per_s": n * sample_bytes / BYTES_PER_MB / seconds if seconds > 0 else math.inf,
                "reads": stats.reads,
                "bytes_read": stats.bytes_read,
                "service_seconds": stats.seconds,
            }
        return results
    finally:
        inner.fs.rm(inner.root, recursive=True)
