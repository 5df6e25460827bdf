"""``hotset bench loader``: samples/s and stall of the real loader over a slow store.

Every row reads the same generated dataset through one job-wide modeled
server (:class:`~hotset.storage.shared_throttle.SharedThrottledStore`:
``latency_ms`` per request, ``concurrency`` requests in flight across *all*
worker processes), with ``workers`` DataLoader workers, batches of
``batch_size`` and a fixed ``compute_ms`` of "training" per batch (a sleep, so
the figure measures the data path, not this machine's arithmetic). Rows:

* ``torch`` -- a ``torch.utils.data.DataLoader`` (``shuffle=True``) tuned as a
  careful user would (:mod:`hotset.bench.torch_baseline`): each worker reads its
  batch on a thread pool, so the job keeps at least as many requests in flight as
  the store allows; ``torch-untuned`` (``with_untuned``) is the DataLoader as
  PyTorch ships it, one read per worker, labelled so;
* one row per hotset system (``pytorch`` = random order without a cache,
  ``lru``, ``shade``...) at ``cache_frac`` of the dataset's bytes, with
  per-sample losses fed back;
* ``no-io`` -- the plain DataLoader over the bytes already in memory: the
  ceiling when storage costs nothing (decoding and the compute sleep remain).

Stall is the time the training loop waited in ``next()`` for each batch, first
batch (worker start-up) included; ``stall_share`` is stall over wall time.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hotset.bench.loader_options import DEFAULT_SYSTEMS as DEFAULT_SYSTEMS
from hotset.bench.loader_options import LoaderBenchOptions
from hotset.bench.torch_baseline import (
    TUNED,
    UNTUNED,
    Baseline,
    PlainDataset,
    dataloader,
    tuned,
    untuned,
)
from hotset.errors import HotsetError
from hotset.storage.presets import StoreModel
from hotset.warnonce import call_once_warned


class MemoryStore:
    """Bytes by key in a dict: the no-I/O row's store (picklable, never slow)."""

    def __init__(self, blobs: dict[str, bytes]) -> None:
        self.blobs = blobs

    def read(self, key: str) -> bytes:
        return self.blobs[key]

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        return [self.blobs[k] for k in keys]

    def size(self, key: str) -> int:
        return len(self.blobs[key])


def timed_batches(
    batches: Iterator[Any], compute_s: float, on_batch: Any = None
) -> tuple[float, int]:
    """Iterate, calling ``on_batch`` then sleeping ``compute_s`` per batch.

    Returns (stall seconds, samples): stall is the time spent waiting in ``next()``.
    """
    stall, samples = 0.0, 0
    while True:
        t0 = time.perf_counter()
        try:
            batch = next(batches)
        except StopIteration:
            return stall, samples
        stall += time.perf_counter() - t0
        samples += len(batch[1])
        if on_batch is not None:
            on_batch(batch)
        if compute_s:
            time.sleep(compute_s)


def with_rates(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row of one :func:`run` with its samples/s over torch's and over no-I/O's."""
    rates = {row["name"]: row["samples_per_s"] for row in table}
    torch_rate, ceiling = rates.get("torch"), rates.get("no-io")
    return [
        row
        | {
            "vs_torch": round(row["samples_per_s"] / torch_rate, 3) if torch_rate else None,
            "vs_no_io": round(row["samples_per_s"] / ceiling, 3) if ceiling else None,
        }
        for row in table
    ]


def median_of_runs(tables: Sequence[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One table from repeated runs of the same rows (each already :func:`with_rates`).

    Why: on a shared machine one run's samples/s moves by a few hundredths from run
    to run, which is the size of the differences the loader suite is read for. Each
    row keeps its first run's counts (requests and bytes repeat exactly: the
    decisions are a function of the seed) and reports the median of its speeds
    (each epoch's too);
    ``vs_no_io`` is the median of each run's own ratio to the no-I/O row measured
    beside it, and ``vs_no_io_runs`` lists them all, so the spread is shown.
    """
    if not tables:
        raise HotsetError("median_of_runs: no runs to combine")
    names = [row["name"] for row in tables[0]]
    for table in tables[1:]:
        if [row["name"] for row in table] != names:
            raise HotsetError("median_of_runs: the runs do not have the same rows")
    out = []
    for i, first in enumerate(tables[0]):
        rows = [table[i] for table in tables]
        row = dict(first)
        for key in ("samples_per_s", "stall_seconds", "stall_share", "wall_seconds"):
            if all(isinstance(r.get(key), int | float) for r in rows):
                row[key] = round(statistics.median(r[key] for r in rows), 3)
        epochs = [e for r in rows if isinstance(e := r.get("per_epoch_samples_per_s"), list)]
        if len(epochs) == len(rows) and len({len(e) for e in epochs}) == 1:
            row["per_epoch_samples_per_s"] = [  # each epoch's median over the runs
                round(statistics.median(col), 1) for col in zip(*epochs, strict=True)
            ]
        for key in ("vs_torch", "vs_no_io"):
            values = [r.get(key) for r in rows]
            numbers = [float(v) for v in values if isinstance(v, int | float)]
            if len(numbers) == len(values):
                row[key] = round(statistics.median(numbers), 3)
                row[key + "_runs"] = values
        out.append(row)
    return out


def plain_row(
    name: str,
    store: Any,
    manifest: Any,
    *,
    workers: int,
    batch_size: int,
    epochs: int,
    compute_s: float,
    seed: int,
    baseline: Baseline | None = None,
    store_in_flight: int | None = None,
) -> dict[str, Any]:
    """A plain DataLoader row: ``baseline`` says how it reads (one read per worker when
    left out: the no-I/O row, whose store is memory); its parameters go in the row."""
    how = baseline if baseline is not None else untuned(workers=workers)
    if how.workers != workers:
        raise HotsetError(f"plain_row: baseline has {how.workers} workers, the row {workers}")
    ds = PlainDataset(
        store, list(manifest.keys), np.asarray(manifest.labels), threads=how.threads_per_worker
    )
    dl = dataloader(ds, how, batch_size=batch_size, seed=seed)
    stall, samples = 0.0, 0
    start = time.perf_counter()
    try:
        for _ in range(epochs):
            s, k = timed_batches(call_once_warned(lambda: iter(dl)), compute_s)
            stall += s
            samples += k
    finally:
        ds.close()
    wall = time.perf_counter() - start
    # shuffle=True: every epoch is a permutation of the whole dataset
    row = _row(name, samples, wall, stall, hits=None, reads=samples, unique=len(manifest))
    row["storage_bytes"] = row["delivered_bytes"] = epochs * int(manifest.total_bytes)
    return row | how.fields(store_in_flight)


#: what the torch row is, in every suite's notes
TUNED_NOTE = (
    "torch: a DataLoader tuned as a careful user would (shuffle=True, the same workers, batch "
    "size and decode as hotset's rows; each worker reads its batch on a thread pool through "
    "__getitems__, at least as many requests in flight as the store allows ({in_flight}) and "
    "as many threads per worker as hotset's io_threads); pytorch: hotset's loader without a "
    "cache; torch-untuned (where shown): the DataLoader as shipped, one read per worker"
)


def torch_rows(
    store: Callable[[], Any],
    manifest: Any,
    *,
    store_in_flight: int,
    io_threads: int,
    with_untuned: bool,
    workers: int,
    **row: Any,
) -> list[dict[str, Any]]:
    """The tuned ``torch`` row, and the labelled ``torch-untuned`` one if asked; ``store()``
    makes a fresh modeled server per row (one row's queue never delays the next)."""
    how = tuned(store_in_flight, workers=workers, io_threads=io_threads)
    rows = [
        plain_row(
            TUNED, store(), manifest, workers=workers, baseline=how,
            store_in_flight=store_in_flight, **row,
        )
    ]  # fmt: skip
    if with_untuned:
        rows.append(
            plain_row(
                UNTUNED, store(), manifest, workers=workers, baseline=untuned(workers=workers),
                store_in_flight=store_in_flight, **row,
            )
        )  # fmt: skip
    return rows


def _row(
    name: str,
    samples: int,
    wall: float,
    stall: float,
    *,
    hits: float | None,
    reads: int,
    unique: float,
) -> dict[str, Any]:
    return {
        "name": name,
        "samples_per_s": round(samples / wall, 1) if wall > 0 else math.inf,
        "stall_seconds": round(stall, 3),
        "stall_share": round(stall / wall, 3) if wall > 0 else 0.0,
        "exact_hit_ratio": hits,
        "storage_requests": reads,
        # coverage beside the hit ratio: distinct samples trained per epoch
        "unique_ids_trained_per_epoch": round(unique, 1),
        "wall_seconds": round(wall, 3),
    }


def hotset_row(
    system: str,
    data: Any,
    *,
    cache_frac: float,
    workers: int,
    batch_size: int,
    epochs: int,
    compute_s: float,
    seed: int,
    io_threads: int,
    losses: Callable[[Any, int], Any] | None = None,
) -> dict[str, Any]:
    """One hotset system's row; ``losses(ids, epoch)`` stands in for the training
    loop's per-sample losses (uniform random draws when not given)."""
    import torch

    from hotset.systems.registry import parse_system
    from hotset.torch import loader as make_loader

    name, options = parse_system(system)
    # a system without a cache (capabilities.caches False) opens none, whatever the size
    with make_loader(
        data,
        system=name,
        system_options=options,
        cache=cache_frac,
        batch_size=batch_size,
        num_workers=workers,
        seed=seed,
        io_threads=io_threads,
        check_store="off",
    ) as ld:
        rng = np.random.default_rng(seed)
        sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
        delivered = [0]
        epoch_now = [0]

        def stand_in(ids: Any) -> Any:
            if losses is None:
                return rng.random(len(ids)) + 0.1
            return losses(np.asarray(ids), epoch_now[0])

        def feedback(batch: Any) -> None:
            ids = batch[2]
            delivered[0] += int(sizes[np.asarray(ids)].sum())
            ld.update(ids, torch.from_numpy(np.asarray(stand_in(ids), dtype=np.float64)))

        if ld.system.capabilities.evaluates:  # ImPACT: a stand-in forward pass, as free
            ld.evaluate_with(lambda _x, _y, ids: stand_in(ids))

        start = time.perf_counter()
        for epoch in range(epochs):
            epoch_now[0] = epoch
            ld.set_epoch(epoch)
            timed_batches(iter(ld), compute_s, feedback)
        wall = time.perf_counter() - start
        rows = ld.report()
    requests = sum(r["requests"] for r in rows)
    hits = sum(r["exact_hits"] for r in rows)
    reads = sum(r["storage_requests"] + r["rebuild_reads"] for r in rows)
    stall = sum(r["stall_seconds"] for r in rows)
    unique = sum(r["unique_ids_trained"] for r in rows) / len(rows)
    out = _row(
        system, requests, wall, stall, hits=round(hits / requests, 4), reads=reads, unique=unique
    )
    out["per_epoch_samples_per_s"] = [round(r["samples_per_s"], 1) for r in rows]
    out["substitution_ratio"] = round(sum(r["substitutions"] for r in rows) / requests, 4)
    out["fetched_ahead_ratio"] = round(sum(r["fetched_ahead"] for r in rows) / requests, 4)
    out["unit_reads"] = sum(r["unit_reads"] for r in rows)
    # bytes the store moved for this job: its reads, rebuilds and iCACHE's packer
    out["storage_bytes"] = sum(
        r["storage_bytes"] + r["rebuild_bytes"] + r["pack_bytes"] for r in rows
    )
    out["delivered_bytes"] = delivered[0]
    out["pack_reads"] = sum(r["pack_reads"] for r in rows)
    wasted, read = (getattr(ld.system.policy, k, None) for k in ("wasted_bytes", "chunk_bytes"))
    if wasted is not None and read is not None:  # chunk bytes neither served nor kept (Brand)
        out["wasted_read_share"] = round(wasted / read, 4) if read else 0.0
    return out


#: the store of a run without one: 2 ms per request, 4 in flight, an unlimited link
DEFAULT_STORE = StoreModel(latency_ms=2.0, bandwidth_mb_s=math.inf, max_concurrency=4)
#: the options of a run without any (every default)
DEFAULT_OPTIONS = LoaderBenchOptions()


def run(
    opts: LoaderBenchOptions = DEFAULT_OPTIONS, *, store: StoreModel = DEFAULT_STORE
) -> dict[str, Any]:
    """Measure every row once over ``store``; ``opts.dataset`` (a directory) skips
    generating a synthetic one.

    ``sizes="imagenet"`` pads the generated samples to ImageNet-like byte sizes
    (:mod:`hotset.data.sizes`: log-normal, mean 110 kB) with the same pixels.

    A generated data set is packed (a seeded shuffle cut into ``chunk_size`` chunks)
    when a system reads whole chunks; the others read its sample files as before.
    """
    from hotset.bench.workloads import needs_chunks

    chunked = needs_chunks(opts.systems)
    with tempfile.TemporaryDirectory(prefix="hotset-bench-") as tmp:
        data = _open_data(opts, Path(tmp), chunked=chunked)
        table = _measure_rows(opts, store, data)
    return {
        "params": _params(opts, store, data.manifest, chunked=chunked),
        "table": table,
        "notes": _notes(opts, store),
    }


def _open_data(opts: LoaderBenchOptions, tmp: Path, *, chunked: bool) -> Any:
    """``opts.dataset``, else a synthetic set generated under ``tmp`` (packed when a
    system reads chunks), opened without retries: the modeled server stands for the
    store, so no retry may hide its cost."""
    from hotset.bench.workloads import ensure_packed
    from hotset.data import SynthConfig, make_synth
    from hotset.torch import open_dataset

    dataset = opts.dataset
    if dataset is None:
        dataset = str(tmp / "synth")
        cfg = SynthConfig(n=opts.n, image_size=opts.image_size, seed=opts.seed, sizes=opts.sizes)
        make_synth(dataset, cfg, workers=1)
        if chunked:
            ensure_packed(dataset, chunk_size=opts.chunk_size, seed=opts.seed)
    return open_dataset(dataset, retries=0)


def _measure_rows(opts: LoaderBenchOptions, store: StoreModel, data: Any) -> list[dict[str, Any]]:
    """The torch row(s), one row per hotset system, then the no-I/O row; each row that
    reads storage gets a fresh modeled server (one row's queue never delays the next)."""
    from hotset.storage.local import LocalStore

    manifest = data.manifest
    inner = data.store
    assert isinstance(inner, LocalStore)
    compute_s = opts.compute_ms / 1000.0

    def throttled() -> Any:
        return store.throttle(inner)

    common: dict[str, Any] = {
        "workers": opts.workers,
        "batch_size": opts.batch_size,
        "epochs": opts.epochs,
    }
    table = torch_rows(
        throttled,
        manifest,
        store_in_flight=store.max_concurrency,
        io_threads=opts.io_threads,
        with_untuned=opts.torch_untuned,
        compute_s=compute_s,
        seed=opts.seed,
        **common,
    )
    for name in opts.systems:
        table.append(
            hotset_row(
                name,
                data.with_store(throttled()),
                cache_frac=opts.cache_frac,
                compute_s=compute_s,
                seed=opts.seed,
                io_threads=opts.io_threads,
                **common,
            )
            | {"requests_in_flight": max(1, opts.workers) * opts.io_threads}
        )
    memory = MemoryStore({k: inner.read(k) for k in manifest.keys})
    row = plain_row("no-io", memory, manifest, compute_s=compute_s, seed=opts.seed, **common)
    row["storage_requests"] = 0
    table.append(row)
    return table


def _params(
    opts: LoaderBenchOptions, store: StoreModel, manifest: Any, *, chunked: bool
) -> dict[str, Any]:
    """The result's ``params``: what one run measured, the data set as it was read."""
    concurrency, bandwidth_mb_s = store.max_concurrency, store.bandwidth_mb_s
    return {
        "latency_ms": store.latency_ms,
        "concurrency": concurrency,
        "bandwidth_mb_s": None if math.isinf(bandwidth_mb_s) else bandwidth_mb_s,
        "workers": opts.workers,
        "batch_size": opts.batch_size,
        "compute_ms": opts.compute_ms,
        "cache_frac": opts.cache_frac,
        "n": len(manifest),
        "epochs": opts.epochs,
        "image_size": opts.image_size,
        "io_threads": opts.io_threads,
        "seed": opts.seed,
        "chunk_size": opts.chunk_size if chunked else None,
        "torch": tuned(concurrency, workers=opts.workers, io_threads=opts.io_threads).fields(
            concurrency
        ),
        "sizes": opts.sizes,
        "mean_sample_bytes": round(manifest.total_bytes / len(manifest)),
    }


def _notes(opts: LoaderBenchOptions, store: StoreModel) -> list[str]:
    """How to read a run's rows: the store, the compute ceiling, what each row is."""
    latency_ms, concurrency, bandwidth_mb_s = (
        store.latency_ms,
        store.max_concurrency,
        store.bandwidth_mb_s,
    )
    compute_ms, batch_size = opts.compute_ms, opts.batch_size
    return [
        f"one modeled server for the whole job: {latency_ms:g} ms per request, "
        f"{concurrency} requests in flight across all {opts.workers} workers"
        + ("" if math.isinf(bandwidth_mb_s) else f", one {bandwidth_mb_s:g} MB/s link")
        + " (real clock)",
        f"compute is a {compute_ms:g} ms sleep per batch; ceiling "
        f"{1000.0 * batch_size / compute_ms if compute_ms else math.inf:.0f} samples/s",
        TUNED_NOTE.format(in_flight=concurrency),
        "stall = time the loop waited in next(), worker start-up included",
        "per-sample losses fed back are random (the data path is measured, not learning); "
        "a system that re-evaluates samples (ImPACT) gets a stand-in forward pass returning "
        "random losses at no cost; unit_reads are chunk or package requests (in "
        "storage_requests), pack_reads what iCACHE's packer read to write packages (not in "
        "storage_requests)",
    ]


def _quiet(_message: str) -> None:
    """The default ``log``: a Python caller asked for no progress lines."""


def run_tables(
    opts: LoaderBenchOptions,
    stores: Sequence[StoreModel],
    *,
    log: Callable[[str], None] = _quiet,
) -> dict[str, Any]:
    """One table per store (``bench loader`` runs one per latency), each row the median
    of ``opts.repeats`` runs (:func:`median_of_runs`: one run moves by a few hundredths
    on a shared machine), with every run kept under ``runs``."""
    repeats = opts.repeats
    table: list[dict[str, Any]] = []
    runs = []
    notes: list[str] = []
    if repeats > 1:
        notes.append(
            f"{repeats} runs of every table: each speed is the median of the runs; "
            "vs_no_io is the median of each run's ratio to its own no-I/O row, and "
            "vs_no_io_runs lists every run's"
        )
    for store in stores:
        latency = store.latency_ms
        tables = []
        for rep in range(repeats):
            of = f" (run {rep + 1} of {repeats})" if repeats > 1 else ""
            log(f"loader benchmark at {latency:g} ms per request{of} ...")
            result = run(opts, store=store)
            runs.append(result)
            tables.append(with_rates(result["table"]))
            notes += [note for note in result.get("notes", []) if note not in notes]
        table += [{"latency_ms": latency} | row for row in median_of_runs(tables)]
    return {"table": table, "notes": notes, "runs": runs, "store": [s.as_dict() for s in stores]}
