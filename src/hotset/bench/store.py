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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hotset.bench.store_options import StoreBenchOptions, check_count
from hotset.data.chunks import ChunkLayout, chunk_key, read_chunk
from hotset.data.manifest import content_hash
from hotset.storage.fsspec_store import FsspecStore
from hotset.storage.throttled import BYTES_PER_MB, Clock, ThrottledStore

#: both clocks, real first: every measurement reports the two side by side
_CLOCKS: tuple[Clock, ...] = ("real", "virtual")


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
    check_count("n", n, minimum=1)
    check_count("threads", threads, minimum=1)
    check_count("sample_bytes", sample_bytes, minimum=0)
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
        for clock in _CLOCKS:
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


def _chunk_reader(layout: ChunkLayout, payloads: list[bytes]) -> Callable[[ThrottledStore], float]:
    """The chunk case: one :func:`~hotset.data.chunks.read_chunk` of the whole layout, its
    wall seconds; checked byte for byte against the payloads, so a fast read that
    returned other bytes cannot pass for a win."""

    def chunk(store: ThrottledStore) -> float:
        start = time.perf_counter()
        got = read_chunk(store, layout, 0)
        wall = time.perf_counter() - start
        if [got[i] for i in range(len(payloads))] != payloads:
            raise AssertionError("a chunk read returned other bytes than the single reads")
        return wall

    return chunk


def _median_rows(
    cases: dict[str, Callable[[ThrottledStore], float]],
    make: Callable[[Clock], ThrottledStore],
    repeats: int,
) -> list[dict[str, Any]]:
    """Each case on each clock ``repeats`` times, every time on a fresh store (idle lanes
    and link, so one run's queue never delays the next): the median seconds and wall
    seconds, and the request count, which must not vary between runs."""
    rows: list[dict[str, Any]] = []
    for case, drive in cases.items():
        for clock in _CLOCKS:
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
    return rows


def _against_chunk(
    rows: list[dict[str, Any]], chunk_case: str, threads_case: str, sequential_case: str
) -> dict[str, Any]:
    """Set each row's ``vs_chunk`` (its seconds over the chunk's on the same clock) and
    return the per-clock summary: the three cases' seconds and the singles' ratios."""
    by_case = {(row["case"], row["clock"]): row["seconds"] for row in rows}
    for row in rows:
        row["vs_chunk"] = _ratio(row["seconds"], by_case[(chunk_case, row["clock"])])
    return {
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
        for clock in _CLOCKS
    }


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
    check_count("samples", samples, minimum=1)
    check_count("threads", threads, minimum=1)
    check_count("sample_bytes", sample_bytes, minimum=0)
    check_count("repeats", repeats, minimum=1)
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

    chunk_case = f"{samples} as one chunk"
    threads_case = f"{samples} single reads, {threads} threads"
    sequential_case = f"{samples} single reads, one at a time"
    cases: dict[str, Callable[[ThrottledStore], float]] = {
        chunk_case: _chunk_reader(layout, payloads),
        threads_case: lambda store: _drive(store, keys, threads),
        sequential_case: lambda store: _sequential(store, keys),
    }
    try:
        for key, payload in zip(keys, payloads, strict=True):
            inner.write(key, payload)
        inner.write(layout.chunk_keys[0], blob)
        rows = _median_rows(cases, make, repeats)
    finally:
        inner.fs.rm(inner.root, recursive=True)
    summary = _against_chunk(rows, chunk_case, threads_case, sequential_case)
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


#: the options of a run without any (every default)
DEFAULT_OPTIONS = StoreBenchOptions()


def run(opts: StoreBenchOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """Both measurements (:func:`run_throttled`, then :func:`run_chunk_vs_singles` on the
    same store settings and sample size), one table of both and notes that read them."""
    result = run_throttled(
        n=opts.n,
        threads=opts.threads,
        latency_ms=opts.latency_ms,
        concurrency=opts.concurrency,
        bandwidth_mb_s=opts.bandwidth_mb_s,
        sample_bytes=opts.sample_bytes,
    )
    chunk = run_chunk_vs_singles(
        samples=opts.chunk_size,
        threads=opts.threads,
        latency_ms=opts.latency_ms,
        concurrency=opts.concurrency,
        bandwidth_mb_s=opts.bandwidth_mb_s,
        sample_bytes=result["sample_bytes"],
        repeats=opts.repeats,
    )
    result["chunk"] = chunk
    result["table"] = _table(opts, result, chunk)
    result["notes"] = _notes(opts, result, chunk)
    return result


def _table(
    opts: StoreBenchOptions, result: dict[str, Any], chunk: dict[str, Any]
) -> list[dict[str, Any]]:
    """One row per clock of the ``n`` single reads, then the chunk cases' rows, in the same
    columns so the README's table reads them side by side."""
    singles = [
        {
            "case": f"{opts.n} single reads, {opts.threads} threads",
            "clock": clock,
            "seconds": result[clock]["seconds"],
            "samples_per_s": result[clock]["samples_per_s"],
            "reads": result[clock]["reads"],
            "bytes_read": result[clock]["bytes_read"],
            "wall_seconds": result[clock]["wall_seconds"],
            "vs_chunk": None,
        }
        for clock in _CLOCKS
    ]
    samples = opts.chunk_size
    return singles + [
        {
            "case": row["case"],
            "clock": row["clock"],
            "seconds": row["seconds"],
            "samples_per_s": samples / row["seconds"] if row["seconds"] > 0 else None,
            "reads": row["reads"],
            "bytes_read": samples * chunk["sample_bytes"],
            "wall_seconds": row["wall_seconds"],
            "vs_chunk": round(row["vs_chunk"], 2),
        }
        for row in chunk["rows"]
    ]


def _notes(opts: StoreBenchOptions, result: dict[str, Any], chunk: dict[str, Any]) -> list[str]:
    """What the two measurements were, and the chunk's case in real-clock figures."""
    real = chunk["summary"]["real"]
    n, threads, samples = opts.n, opts.threads, opts.chunk_size
    return [
        f"{n} reads of {result['sample_bytes']} B from {threads} threads, latency "
        f"{opts.latency_ms} ms, {opts.concurrency} in flight, {opts.bandwidth_mb_s} MB/s; "
        f"lower bound {result['lower_bound_seconds']:.3f} s. Real seconds are wall time; "
        "virtual seconds are modeled (the virtual clock does not sleep).",
        f"Chunk rows: {samples} samples of {chunk['sample_bytes']} B read as one chunk file "
        f"(hotset.data.chunks.read_chunk: one request, model {chunk['chunk_model_seconds'] * 1e3:.3f}"
        f" ms) against one request per sample, from {threads} threads or from 1 thread waiting "
        f"for each read, same store settings; median of {chunk['repeats']} runs on a fresh "
        f"store. vs_chunk = seconds / the chunk's seconds on the same clock. Real clock: chunk "
        f"{real['chunk_seconds'] * 1e3:.2f} ms, {samples} single reads "
        f"{real['singles_seconds'] * 1e3:.2f} ms ({real['singles_over_chunk']:.1f}x), "
        f"one at a time {real['sequential_seconds'] * 1e3:.2f} ms "
        f"({real['sequential_over_chunk']:.1f}x).",
    ]
