"""The loader over a real Redis server and a real three-master Redis Cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torch_support import run_epoch

import hotset
from hotset.cachestore.base import CacheKey
from hotset.errors import HotsetError


def _exact_epochs(loader: hotset.torch.HotsetLoader, epochs: int) -> None:
    store, manifest = loader.data.store, loader.data.manifest
    truth = [store.read(k) for k in manifest.keys]
    for epoch in range(epochs):
        batches = run_epoch(loader, epoch)
        served = np.concatenate([b[2].numpy() for b in batches]).tolist()
        assert served == loader.decisions().served
        for x, _, ids, _ in batches:
            assert x == [truth[s] for s in ids.tolist()]
        cache = loader.cache
        assert cache is not None and cache.used_bytes() <= loader.capacity_bytes
        resident = loader.system.policy.resident()
        for sid in range(len(manifest)):
            if cache.contains(CacheKey(sid, manifest.hashes[sid])):
                assert sid in resident
    rows = loader.report()
    assert sum(r["exact_hits"] for r in rows) > 0
    assert all(r["rebuild_reads"] == 0 for r in rows)


@pytest.mark.parametrize("workers", [0, 2])
def test_redis_server(dataset_dir: Path, redis_server: Any, workers: int) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    with hotset.loader(
        data,
        system="lru",
        cache=url,
        cache_bytes=0.3,
        batch_size=16,
        num_workers=workers,
        verify=True,
        namespace=f"torchtest-{workers}",
    ) as loader:
        _exact_epochs(loader, 2)
        assert loader.namespace is not None
        assert loader.namespace.startswith(f"torchtest-{workers}@")
        keys = redis_server.client().keys(f"hotset:{loader.namespace}:*")
        assert len(keys) > 1  # the entries really live in the server


def test_redis_cluster(dataset_dir: Path, redis_cluster: Any) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    url = "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in redis_cluster.nodes)
    with hotset.loader(
        data,
        system="shade",
        cache=url,
        cache_bytes=0.3,
        batch_size=16,
        num_workers=2,
        verify=True,
        namespace="torchcluster",
    ) as loader:
        _exact_epochs(loader, 2)
        pattern = f"hotset:{loader.namespace}:*"
        per_node = [len(n.client().keys(pattern)) for n in redis_cluster.nodes]
        assert sum(1 for c in per_node if c > 0) >= 2  # spread over the masters


@pytest.mark.parametrize("cache", [None, "memory", "shm"])
def test_a_namespace_needs_a_redis_cache(dataset_dir: Path, cache: str | None) -> None:
    """The embedded cache is private to the loader: a sharing key there would be ignored."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    options: dict[str, Any] = {} if cache is None else {"cache": cache, "cache_bytes": 0.3}
    with pytest.raises(HotsetError, match=r"namespace='team'.*give a Redis cache"):
        hotset.loader(data, system="lru", namespace="team", **options)
