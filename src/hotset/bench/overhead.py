"""``hotset bench overhead``: what hotset itself costs, apart from storage.

Four measurements, each on this machine's wall clock:

* policy decisions per second (the trace replay of :mod:`hotset.bench.sim`);
* per-sample loader overhead: hotset's loader (``num_workers=0``, raw bytes)
  against a plain ``torch.utils.data.DataLoader`` reading the same local files
  in batches of the same size, per sample, in microseconds;
* shared-memory cache bandwidth: batched gets (hits) and puts of 100 kB samples;
* Redis hit throughput against a real ``redis-server`` this benchmark starts on
  a free loopback port; without one, the row says so and carries no number.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np

from hotset.errors import HotsetError
from hotset.options import cli, cli_fields


def _row(metric: str, value: float | None, unit: str, detail: str) -> dict[str, Any]:
    return {
        "metric": metric,
        "value": None if value is None else round(value, 3),
        "unit": unit,
        "detail": detail,
    }


def policy_rows(accesses: int) -> list[dict[str, Any]]:
    from hotset.bench.sim import SimBenchOptions
    from hotset.bench.sim import run as run_sim

    result = run_sim(
        SimBenchOptions(accesses=accesses, n=max(1000, accesses // 10), cache_frac=0.2)
    )
    return [
        _row(
            f"policy decisions ({r['policy']})",
            r["accesses_per_s"] / 1e6,
            "M/s",
            f"{accesses} accesses, random permutations, 20% cache, one core",
        )
        for r in result["table"]
    ]


def _items(count: int, size: int) -> list[tuple[Any, bytes]]:
    from hotset.cachestore import CacheKey, content_hash

    rng = random.Random(0)
    out = []
    for i in range(count):
        data = rng.randbytes(size)
        out.append((CacheKey(i, content_hash(data)), data))
    return out


def _bandwidth(cache: Any, items: list[tuple[Any, bytes]], rounds: int) -> tuple[float, float]:
    """(get GB/s, put GB/s) over ``rounds`` batched rounds; every get must hit."""
    keys = [k for k, _ in items]
    total = sum(len(d) for _, d in items)
    put_s = 0.0
    get_s = 0.0
    for _ in range(rounds):
        cache.delete_many(keys)
        start = time.perf_counter()
        cache.put_many(items)
        put_s += time.perf_counter() - start
        start = time.perf_counter()
        got = cache.get_many(keys)
        get_s += time.perf_counter() - start
        if any(g is None for g in got):
            raise HotsetError("cache bandwidth benchmark: a planned hit missed")
    return total * rounds / get_s / 1e9, total * rounds / put_s / 1e9


def shm_rows(count: int = 256, size: int = 100_000, rounds: int = 20) -> list[dict[str, Any]]:
    from hotset.cachestore.shm import SharedMemoryCache

    items = _items(count, size)
    cache = SharedMemoryCache(count * size, n_slots=count)
    try:
        get_gb, put_gb = _bandwidth(cache, items, rounds)
    finally:
        cache.close()
    detail = f"batches of {count} x {size // 1000} kB, {rounds} rounds, one process"
    return [
        _row("shared-memory hit bandwidth", get_gb, "GB/s", detail),
        _row("shared-memory put bandwidth", put_gb, "GB/s", detail),
    ]


def redis_rows(count: int = 256, size: int = 100_000, rounds: int = 10) -> list[dict[str, Any]]:
    if shutil.which("redis-server") is None:
        reason = "not measured: redis-server is not on PATH"
        return [_row("redis hit throughput", None, "GB/s", reason)]
    from hotset.bench.redis_server import local_redis
    from hotset.cachestore.redis_store import RedisCache

    with local_redis() as server:
        cache = RedisCache(server.url, namespace="bench", capacity_bytes=count * size)
        items = _items(count, size)
        try:
            get_gb, _ = _bandwidth(cache, items, rounds)
        finally:
            cache.close()
    detail = f"loopback redis-server, pipelined batches of {count} x {size // 1000} kB"
    return [
        _row("redis hit throughput", get_gb, "GB/s", detail),
        _row("redis hit throughput", get_gb * 1e9 / size, "samples/s", detail),
    ]


def loader_rows(n: int = 2000, batch_size: int = 64, epochs: int = 2) -> list[dict[str, Any]]:
    """Per-sample cost of hotset's loader over a plain DataLoader, same files, no latency."""
    from multiprocessing import resource_tracker

    import torch
    from torch.utils.data import DataLoader

    from hotset.bench.torch_baseline import PlainDataset
    from hotset.data import SynthConfig, make_synth
    from hotset.torch import loader as make_loader
    from hotset.torch import open_dataset

    # A shared-memory cache starts multiprocessing's resource tracker: a new Python
    # process, once per interpreter, whose start-up (tens of ms of CPU) would
    # otherwise run beside the first timed epochs. Start it before any timing.
    resource_tracker.ensure_running()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synth"
        make_synth(path, SynthConfig(n=n, image_size=16, seed=0), workers=1)
        data = open_dataset(str(path), decode="bytes")
        ds = PlainDataset(
            data.store, list(data.manifest.keys), np.asarray(data.manifest.labels), decode=False
        )
        plain: DataLoader[Any] = DataLoader(
            ds,  # type: ignore[arg-type]
            batch_size=batch_size,
            shuffle=True,
            num_workers=0,
            generator=torch.Generator().manual_seed(0),
            collate_fn=lambda batch: batch,
        )
        start = time.perf_counter()
        for _ in range(epochs):
            for _batch in plain:
                pass
        plain_us = (time.perf_counter() - start) / (n * epochs) * 1e6
        rows.append(_row("plain DataLoader per sample", plain_us, "us", f"{n} local files, bytes"))
        lru_frac = min(1.0, max(0.2, 2 * batch_size / n))  # a cache that holds a batch
        # one cache size for both: a cache-free system (capabilities.caches False) opens none
        for system, cache in (("pytorch", lru_frac), ("lru", lru_frac)):
            with make_loader(data, system=system, cache=cache, batch_size=batch_size, seed=0) as ld:
                start = time.perf_counter()
                for epoch in range(epochs):
                    ld.set_epoch(epoch)
                    for _batch in ld:
                        pass
                hotset_us = (time.perf_counter() - start) / (n * epochs) * 1e6
            rows.append(
                _row(
                    f"hotset loader overhead per sample ({system})",
                    hotset_us - plain_us,
                    "us",
                    f"hotset {hotset_us:.1f} us vs plain {plain_us:.1f} us; num_workers=0, "
                    f"batch {batch_size}, {epochs} epochs",
                )
            )
    return rows


@dataclass(frozen=True)
class OverheadOptions:
    """How much ``bench overhead`` measures; the command line is generated from the
    fields (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike."""

    accesses: int = field(default=300_000, metadata=cli(type=click.IntRange(min=1000)))
    loader_n: int = field(default=2000, metadata=cli(type=click.IntRange(min=100)))
    cache_count: int = field(default=256, metadata=cli(type=click.IntRange(min=1)))
    cache_size: int = field(default=100_000, metadata=cli(type=click.IntRange(min=1)))
    cache_rounds: int = field(default=20, metadata=cli(type=click.IntRange(min=1)))

    def __post_init__(self) -> None:
        """A count below its option's range fails before any work, naming the option: the
        command line's ranges (each field's ``IntRange``) hold for a run built in Python."""
        for spec_field, spec in cli_fields(type(self)):
            value, least = getattr(self, spec_field.name), spec.type.min
            if value < least:
                raise HotsetError(
                    f"bench overhead: {spec.option_name(spec_field.name)} must be >= {least}, "
                    f"got {value}"
                )


def run(opts: OverheadOptions = OverheadOptions()) -> dict[str, Any]:
    """Every measurement in turn: policy, loader, shared memory, Redis."""
    accesses, loader_n = opts.accesses, opts.loader_n
    cache_count, cache_size, cache_rounds = opts.cache_count, opts.cache_size, opts.cache_rounds
    table = [
        *policy_rows(accesses),
        *loader_rows(n=loader_n),
        *shm_rows(count=cache_count, size=cache_size, rounds=cache_rounds),
        *redis_rows(count=cache_count, size=cache_size, rounds=max(1, cache_rounds // 2)),
    ]
    return {
        "params": {
            "accesses": accesses,
            "loader_n": loader_n,
            "cache_count": cache_count,
            "cache_size": cache_size,
            "cache_rounds": cache_rounds,
        },
        "table": table,
        "notes": [
            "Wall-clock measurements on this machine (2 cores shared with nothing else by design, "
            "but not isolated). The loader overhead is hotset's per-sample time minus a plain "
            "DataLoader's over the same local files (page cache warm), no storage latency.",
        ],
    }
