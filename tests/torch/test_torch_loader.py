"""The loader delivers exactly the planned samples, byte for byte, with any worker count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch_support import run_epoch

import hotset
from hotset.cachestore.base import CacheKey
from hotset.data.manifest import content_hash
from hotset.policies.base import Outcome


def _check_epoch(
    loader: hotset.torch.HotsetLoader, batches: list, store_bytes: list[bytes]
) -> None:
    log = loader.decisions()
    served = np.concatenate([b[2].numpy() for b in batches])
    # exactly the planned samples, in planned order
    assert served.tolist() == log.served
    # byte-exact against the store, whatever the bytes came from (cache or store)
    for x, y, ids, w in batches:
        assert isinstance(x, list) and len(x) == len(ids)
        for blob, sid in zip(x, ids.tolist(), strict=True):
            assert blob == store_bytes[sid]
        labels = loader.data.manifest.labels[ids.numpy()]
        assert y.tolist() == labels.tolist()
        assert torch.all(w == 1.0)
    row = loader.report()[-1]
    outcomes = np.asarray(log.outcomes)
    assert row["requests"] == len(served)
    assert row["exact_hits"] == int((outcomes == Outcome.HIT).sum())
    assert row["substitutions"] == int((outcomes == Outcome.SUBSTITUTION).sum())
    assert row["storage_reads"] == int((outcomes == Outcome.MISS).sum())
    assert row["fetched_ahead"] == int((outcomes == Outcome.PREFETCHED).sum())
    assert row["requests"] == (
        row["exact_hits"] + row["substitutions"] + row["fetched_ahead"] + row["storage_reads"]
    )
    # coverage beside the hit ratio: the distinct ids this epoch served
    assert row["unique_ids_trained"] == len(set(served.tolist()))


def _cache_matches_policy(loader: hotset.torch.HotsetLoader) -> None:
    """The cache never holds more than the budget, nor an id the policy does not hold."""
    cache = loader.cache
    assert cache is not None
    assert cache.used_bytes() <= loader.capacity_bytes
    resident = loader.system.policy.resident()
    manifest = loader.data.manifest
    for sid in range(len(manifest)):
        if cache.contains(CacheKey(sid, manifest.hashes[sid])):
            assert sid in resident, f"cache holds {sid}, which the policy evicted"


@pytest.mark.parametrize(("workers", "system"), [(0, "shade"), (2, "lru"), (4, "shade")])
def test_delivers_planned_samples_byte_exact(dataset_dir: Path, workers: int, system: str) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    store_bytes = [data.store.read(k) for k in data.manifest.keys]
    assert [content_hash(b) for b in store_bytes] == data.manifest.hashes
    with hotset.loader(
        data, system=system, cache=0.3, batch_size=16, num_workers=workers, verify=True
    ) as loader:
        hits = 0
        for epoch in range(3):
            batches = run_epoch(loader, epoch)
            _check_epoch(loader, batches, store_bytes)
            _cache_matches_policy(loader)
            hits += loader.report()[-1]["exact_hits"]
        rows = loader.report()
        assert [r["epoch"] for r in rows] == [0, 1, 2]
        assert all(r["rebuild_reads"] == 0 for r in rows)
        # misses read each distinct id of a batch once, with the manifest's sizes
        for r in rows:
            assert r["storage_requests"] <= r["storage_reads"]
        assert hits > 0  # a 30% cache must hit something over three epochs


def test_image_decode_pin_memory_persistent_workers(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir, transform=lambda t: t * 2.0)
    with hotset.loader(
        data,
        system="lru",
        cache="20kb",
        batch_size=32,
        num_workers=2,
        pin_memory=True,
        persistent_workers=True,
    ) as loader:
        first = run_epoch(loader, 0)
        second = run_epoch(loader, 1)
        x, _, ids, _ = first[0]
        assert x.dtype == torch.float32 and x.shape == (32, 3, 8, 8)
        assert float(x.max()) <= 2.0 and float(x.max()) > 1.0  # the transform ran
        # decoding the store's bytes gives the same tensor
        from hotset.data.decode import decode

        sid = int(ids[0])
        key = data.manifest.keys[sid]
        expect = torch.from_numpy(decode(data.store.read(key), key)) * 2.0
        assert torch.equal(x[0], expect)
        assert sum(len(b[2]) for b in first) == sum(len(b[2]) for b in second) == 200
        assert loader.report()[1]["exact_hits"] > 0


def test_break_mid_epoch_then_continue(dataset_dir: Path) -> None:
    """An abandoned epoch leaves the cache consistent and the next epoch whole."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    store_bytes = [data.store.read(k) for k in data.manifest.keys]
    with hotset.loader(data, system="lru", cache=0.3, batch_size=8, num_workers=2) as loader:
        loader.set_epoch(0)
        for i, (_, _, ids, _) in enumerate(loader):
            loader.update(ids, torch.ones(len(ids)))
            if i == 3:
                break
        batches = run_epoch(loader, 1)
        _check_epoch(loader, batches, store_bytes)
        _cache_matches_policy(loader)
        assert len(loader.report()) == 2


@pytest.mark.parametrize(
    ("context", "persistent"),
    [("spawn", True), ("forkserver", False), ("forkserver-object", True)],
)
def test_spawned_and_forkserver_workers(dataset_dir: Path, context: str, persistent: bool) -> None:
    """Workers started without a fork of this process get the cache, the sequencer and the
    store by pickle. A fork server's worker follows the server, not this process, to its
    death (a worker that took the server for a wrong parent killed itself at once); a
    context object serves as well as its name."""
    import multiprocessing

    data = hotset.open_dataset(dataset_dir, decode="bytes")
    store_bytes = [data.store.read(k) for k in data.manifest.keys]
    method = context.removesuffix("-object")
    with hotset.loader(
        data,
        system="lru",
        cache=0.3,
        batch_size=16,
        num_workers=2,
        persistent_workers=persistent,
        multiprocessing_context=multiprocessing.get_context(method)
        if method != context
        else method,
        verify=True,
    ) as loader:
        for epoch in range(2):
            _check_epoch(loader, run_epoch(loader, epoch), store_bytes)
            _cache_matches_policy(loader)
        assert loader.report()[1]["exact_hits"] > 0


def test_coverage_counts_the_samples_trained_not_those_delivered(dataset_dir: Path) -> None:
    """``base`` delivers every sample and trains IIS's selection (the rest weigh 0):
    the report's coverage is what trains, as the papers' Base saves compute, not reads."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    n = len(data.manifest)
    spec = "base[warm_up=1,window=8]"
    with hotset.loader(data, system=spec, cache=0.3, batch_size=8, num_workers=0) as loader:
        weighted = [run_epoch(loader, epoch) for epoch in range(3)]
        rows = loader.report()
    for batches, row in zip(weighted, rows, strict=True):
        ids = torch.cat([b[2] for b in batches])
        w = torch.cat([b[3] for b in batches])
        assert sorted(ids.tolist()) == list(range(n))  # every sample delivered
        assert row["unique_ids_trained"] == len(set(ids[w > 0].tolist()))
    assert rows[0]["unique_ids_trained"] == n
    assert min(r["unique_ids_trained"] for r in rows[1:]) < n


@pytest.mark.parametrize("workers", [0, 2])
def test_labels_ids_and_weights_leave_the_fetch_as_arrays_and_reach_the_loop_as_tensors(
    dataset_dir: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A tensor crosses from a worker as a shared-memory handle that costs the main
    process a socket connection to receive; the three small ones travel as arrays."""
    from hotset.torch.fetch import BatchFetcher

    kinds: list[tuple[type, ...]] = []
    original = BatchFetcher.__getitem__

    def recorded(self: BatchFetcher, plan: object) -> object:
        out = original(self, plan)  # type: ignore[arg-type]
        if not isinstance(out, Exception):
            kinds.append(tuple(type(part) for part in out[:4]))
        return out

    monkeypatch.setattr(BatchFetcher, "__getitem__", recorded)  # seen with 0 workers
    data = hotset.open_dataset(dataset_dir)
    with hotset.loader(data, system="lru", cache=0.3, batch_size=32, num_workers=workers) as loader:
        batches = run_epoch(loader, 0)
    if workers == 0:
        assert kinds and all(k == (torch.Tensor, np.ndarray, np.ndarray, np.ndarray) for k in kinds)
    labels = np.asarray(data.manifest.labels)
    for x, y, ids, w in batches:
        assert all(isinstance(t, torch.Tensor) for t in (x, y, ids, w))
        assert ids.dtype == torch.int64 and w.dtype == torch.float32
        assert y.tolist() == labels[ids.numpy()].tolist()
        assert torch.all(w == 1.0)
