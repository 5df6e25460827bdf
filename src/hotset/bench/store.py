"""How long a throttled "remote" store takes, really and in modeled time.

The point of :class:`~hotset.storage.throttled.ThrottledStore` having two clocks
is that the simulator's modeled seconds can be trusted to mean wall seconds. This
benchmark reads the same small samples from the same number of threads under both
clocks and reports both figures side by side, with the analytic lower bound.

It also measures why chunked storage exists (:mod:`hotset.data.chunks`): the
same samples read as ONE chunk (one request: one latency plus the bytes at link
bandwidth) against one request per sample, on both clocks.
"""

from __future__ import annotations

import math
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hotset.data.chunks import ChunkLayout, chunk_key, read_chunk
from hotset.data.manifest import content_hash
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


def _sequential(store: ThrottledStore, keys: list[str]) -> float:
    """Read every key in turn from this thread, each read waiting for the last; wall seconds.

    The virtual clock books reads as if issued together, so it is synced after
    each read to model a reader that waits for one sample before asking for the next.
    """
    start = time.perf_counter()
    for key in keys:
        store.read(key)
        if store.virtual:
            store.sync()
    return time.perf_counter() - start


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


def _chunk_layout(keys: list[str], payloads: list[bytes]) -> tuple[ChunkLayout, bytes]:
    """A one-chunk layout holding ``payloads`` in order, and the chunk file's bytes."""
    lengths = [len(p) for p in payloads]
    offsets = [sum(lengths[:i]) for i in range(len(lengths))]
    blob = b"".join(payloads)
    layout = ChunkLayout(
        chunk_of=np.zeros(len(keys), dtype=np.int64),
        offset=np.asarray(offsets, dtype=np.int64),
        length=np.asarray(lengths, dtype=np.int64),
        chunk_keys=(chunk_key(0),),
        chunk_sizes=np.asarray([len(blob)], dtype=np.int64),
        chunk_hashes=(content_hash(blob),),
        chunk_size=len(keys),
    )
    return layout, blob


def _ratio(seconds: float, base: float) -> float:
    return seconds / base if base > 0 else math.inf


def run_chunk_vs_singles(
    *,
    samples: int = 64,
    threads: int = 8,
    latency_ms: float = 2.0,
    concurrency: int = 4,
    bandwidth_mb_s: float = 1000.0,
    sample_bytes: int = 3072,
    repeats: int = 5,
) -> dict[str, Any]:
    """``samples`` samples read as one chunk, as single reads from ``threads`` threads, and
    as single reads one at a time, through a throttled in-memory store.

    This is the case for chunked storage in numbers: one request pays one
    latency, where single reads pay ``ceil(samples / concurrency)`` latencies at
    best and ``samples`` latencies from a reader that waits for each.

    Each case runs ``repeats`` times on a fresh store (idle lanes and link) and
    reports the median real-clock wall seconds, the virtual clock's modeled
    seconds, the request count, and its time relative to the chunk read (same
    clock). The chunk read goes through :func:`hotset.data.chunks.read_chunk`
    and is checked byte for byte against the single reads.
    """
    _check_count("samples", samples, minimum=1)
    _check_count("threads", threads, minimum=1)
    _check_count("sample_bytes", sample_bytes, minimum=0)
    _check_count("repeats", repeats, minimum=1)
    url = f"memory://hotset-bench-chunk-{uuid.uuid4().hex}"
    inner = FsspecStore(url, create=True)
    keys = [f"s{i:07d}" for i in range(samples)]
    payloads = [bytes([i % 256]) * sample_bytes for i in range(samples)]
    layout, blob = _chunk_layout(keys, payloads)

    def make(clock: Clock) -> ThrottledStore:
        return ThrottledStore(
            inner,
            latency_ms=latency_ms,
            bandwidth_mb_s=bandwidth_mb_s,
            max_concurrency=concurrency,
            clock=clock,
        )

    def chunk(store: ThrottledStore) -> float:
        start = time.perf_counter()
        got = read_chunk(store, layout, 0)
        wall = time.perf_counter() - start
        if [got[i] for i in range(samples)] != payloads:
            raise AssertionError("a chunk read returned other bytes than the single reads")
        return wall

    chunk_case = f"{samples} as one chunk"
    threads_case = f"{samples} single reads, {threads} threads"
    sequential_case = f"{samples} single reads, one at a time"
    cases = {
        chunk_case: chunk,
        threads_case: lambda store: _drive(store, keys, threads),
        sequential_case: lambda store: _sequential(store, keys),
    }
    rows: list[dict[str, Any]] = []
    clocks: tuple[Clock, ...] = ("real", "virtual")
    try:
        for key, payload in zip(keys, payloads, strict=True):
            inner.write(key, payload)
        inner.write(layout.chunk_keys[0], blob)
        for case, drive in cases.items():
            for clock in clocks:
                seconds: list[float] = []
                walls: list[float] = []
                reads: set[int] = set()
                for _ in range(repeats):
                    store = make(clock)
                    wall = drive(store)
                    walls.append(wall)
                    seconds.append(wall if clock == "real" else store.modeled_seconds)
                    reads.add(store.stats().reads)
                if len(reads) != 1:
                    raise AssertionError(f"{case}: request count varied between runs: {reads}")
                rows.append(
                    {
                        "case": case,
                        "clock": clock,
                        "reads": reads.pop(),
                        "seconds": statistics.median(seconds),
                        "wall_seconds": statistics.median(walls),
                    }
                )
    finally:
        inner.fs.rm(inner.root, recursive=True)
    by_case = {(row["case"], row["clock"]): row["seconds"] for row in rows}
    for row in rows:
        row["vs_chunk"] = _ratio(row["seconds"], by_case[(chunk_case, row["clock"])])
    summary = {
        clock: {
            "chunk_seconds": by_case[(chunk_case, clock)],
            "singles_seconds": by_case[(threads_case, clock)],
            "sequential_seconds": by_case[(sequential_case, clock)],
            "singles_over_chunk": _ratio(
                by_case[(threads_case, clock)], by_case[(chunk_case, clock)]
            ),
            "sequential_over_chunk": _ratio(
                by_case[(sequential_case, clock)], by_case[(chunk_case, clock)]
            ),
        }
        for clock in clocks
    }
    return {
        "samples": samples,
        "threads": threads,
        "latency_ms": latency_ms,
        "concurrency": concurrency,
        "bandwidth_mb_s": bandwidth_mb_s,
        "sample_bytes": sample_bytes,
        "repeats": repeats,
        "chunk_model_seconds": latency_ms / 1000.0
        + samples * sample_bytes / (bandwidth_mb_s * BYTES_PER_MB),
        "rows": rows,
        "summary": summary,
    }
