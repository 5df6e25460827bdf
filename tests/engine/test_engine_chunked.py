"""A chunked system runs in all three drivers with the same decisions, byte-exact.

``chunk_lru`` reads a whole chunk (one storage request) on a miss and admits
all its ids; ``chunk_lru_prefetch`` also prefetches the next ids' chunks. The
trace simulator, the live-training simulator and the real loader (0, 2 and 4
workers) must agree on every count, and the loader must deliver the store's
bytes for every sample.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hotset
from hotset.data import Manifest
from hotset.engine.counters import COUNTER_KEYS, COVERAGE_KEYS
from hotset.sim.live import LiveOptions, run_live
from hotset.sim.trace import simulate_epochs
from hotset.storage.local import LocalStore

FRAC, EPOCHS, BATCH, SEED = 0.3, 3, 16, 4


def _live(packed_dir: Path, system: str) -> dict[str, Any]:
    return run_live(
        LiveOptions(
            system=system,
            dataset=str(packed_dir),
            cache_frac=FRAC,
            epochs=EPOCHS,
            seed=SEED,
            batch_size=BATCH,
            val_frac=0.0,  # the loader sees the whole dataset: so does the simulator
            train=False,
            record_accesses=True,
        )
    )


@pytest.mark.parametrize("system", ["chunk_lru", "chunk_lru_prefetch", "chunk_lru_whole"])
def test_chunk_reads_are_one_request_each_and_counted_apart(packed_dir: Path, system: str) -> None:
    result = _live(packed_dir, system)
    layout = hotset.open_dataset(packed_dir).layout
    assert layout is not None
    for row in result["epochs"]:
        assert row["requests"] == sum(
            row[k] for k in ("exact_hits", "substitutions", "fetched_ahead", "storage_reads")
        )
        # every request moves one whole chunk
        sizes = layout.chunk_sizes
        assert row["storage_requests"] > 0
        assert row["storage_requests"] * int(sizes.min()) <= row["storage_bytes"]
        assert row["storage_bytes"] <= row["storage_requests"] * int(sizes.max())
        # the ids a chunk read admitted serve later requests: fetched ahead, not hits
        assert row["fetched_ahead"] > 0
        assert row["unique_ids_trained"] == result["n_train"]  # an LRU never drops a sample
    # a chunk kept from an earlier epoch serves exact hits (its members were used before)
    assert sum(r["exact_hits"] for r in result["epochs"][1:]) > 0
    if system == "chunk_lru_prefetch":
        assert sum(r["storage_reads"] for r in result["epochs"]) < sum(
            r["fetched_ahead"] for r in result["epochs"]
        )


def test_the_trace_simulator_agrees_with_the_live_one(packed_dir: Path) -> None:
    result = _live(packed_dir, "chunk_lru")
    layout = hotset.open_dataset(packed_dir).layout
    manifest = Manifest.load(packed_dir)
    from chunked_system import ChunkLRU
    from hotset.policies.registry import register_policy

    register_policy(ChunkLRU.name, f"chunked_system:{ChunkLRU.__name__}")
    trace = simulate_epochs(
        [np.asarray(a, dtype=np.int64) for a in result["accesses"]],
        ChunkLRU.name,
        cache_frac=FRAC,
        sizes=np.asarray(manifest.sizes, dtype=np.int64),
        planned=True,
        verbose=True,
        layout=layout,
    )
    assert trace["capacity_bytes"] == result["capacity_bytes"]
    for mine, theirs in zip(trace["epochs"], result["epochs"], strict=True):
        # one access per batch in a trace: no two requests of a batch share a read, so
        # the trace asks for a chunk again where the live run's batch had it in flight
        for key in ("requests", "exact_hits", "substitutions", "unique_ids_trained"):
            assert mine[key] == theirs[key], key
        assert mine["storage_requests"] >= theirs["storage_requests"]


@pytest.mark.parametrize("workers", [0, 2, 4])
@pytest.mark.parametrize("system", ["chunk_lru", "chunk_lru_prefetch", "chunk_lru_whole"])
def test_the_loader_matches_the_simulator_byte_exact(
    packed_dir: Path, system: str, workers: int
) -> None:
    result = _live(packed_dir, system)
    data = hotset.open_dataset(packed_dir, decode="bytes")
    store = LocalStore(packed_dir)
    want_bytes = [store.read(k) for k in data.manifest.keys]
    with hotset.loader(
        data,
        system=system,
        cache=result["capacity_bytes"],
        batch_size=BATCH,
        num_workers=workers,
        seed=SEED,
    ) as loader:
        for epoch in range(EPOCHS):
            loader.set_epoch(epoch)
            requested: list[int] = []
            for x, _y, ids, _w in loader:
                for blob, sid in zip(x, ids.tolist(), strict=True):
                    assert blob == want_bytes[sid]
            requested = loader.decisions().requested
            assert requested == result["accesses"][epoch]
            # the cache store holds exactly what the policy says: samples, or whole units
            assert loader.cache is not None
            n_ids = len(data.manifest) + (data.layout.n_chunks if data.layout else 0)
            held = {
                c for c in range(n_ids) if loader.cache.contains(loader._parts.fetcher.key_of(c))
            }
            assert held == set(loader.system.policy.cache_ids())
        rows = loader.report()
    for got, want in zip(rows, result["epochs"], strict=True):
        for key in (*COUNTER_KEYS, *COVERAGE_KEYS):
            assert got[key] == want[key], (key, got[key], want[key])
        assert got["rebuild_reads"] == 0


def test_a_chunked_system_without_a_layout_says_how_to_get_one() -> None:
    from hotset.errors import HotsetError
    from hotset.policies.base import Budget
    from hotset.systems.registry import build_system

    sizes = np.full(16, 10, dtype=np.int64)
    with pytest.raises(HotsetError, match=r"reads whole chunks.*hotset data pack"):
        build_system(
            "chunk_lru", n=16, budget=Budget(capacity_bytes=80, sizes=sizes), seed=0, layout=None
        )
