"""The loader over a real Redis server and a real three-master Redis Cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import redis
from torch_support import run_epoch

import hotset
from hotset.cachestore.base import CacheKey
from hotset.data import SynthConfig, make_synth
from hotset.errors import HotsetError
from redis_support import RedisProcess, start_evicting_redis


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


# -- a server that evicts, a client that meddles (issue #25, item 3) -------------------


@pytest.fixture(scope="module")
def big_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 4.2 MB of samples (400 PNGs of 64x64 noise, ~10 kB each): more than the
    evicting server's 3 MB, so it must evict to hold a cache budget above that."""
    path = tmp_path_factory.mktemp("bigds") / "ds"
    make_synth(path, SynthConfig(n=400, image_size=64, classes=4, seed=3), workers=1)
    return path


@pytest.fixture
def evicting(tmp_path: Path) -> Iterator[RedisProcess]:
    server = start_evicting_redis(tmp_path, maxmemory="3mb", policy="allkeys-lru")
    yield server
    server.stop()


def _byte_exact_epochs(loader: hotset.torch.HotsetLoader, epochs: range) -> list[dict[str, Any]]:
    """Run ``epochs``, each batch's bytes checked against the files; the report's rows."""
    store, manifest = loader.data.store, loader.data.manifest
    truth = [store.read(k) for k in manifest.keys]
    for epoch in epochs:
        batches = run_epoch(loader, epoch)
        served = np.concatenate([b[2].numpy() for b in batches]).tolist()
        assert served == loader.decisions().served  # every sample the plan decided
        for x, _, ids, _ in batches:
            assert x == [truth[s] for s in ids.tolist()]
    rows: list[dict[str, Any]] = loader.report()[-len(epochs) :]
    assert all(r["finished"] for r in rows)
    return rows


@pytest.mark.parametrize("system", ["lru", "shade"])
def test_training_survives_a_server_that_evicts(
    big_dir: Path, evicting: RedisProcess, system: str
) -> None:
    """maxmemory 3mb, allkeys-lru, a budget of 3.5 MB: Redis drops entries the policy
    holds and the byte counter never hears of it. Training must go on, byte-exact,
    and the report must say what happened."""
    data = hotset.open_dataset(big_dir, decode="bytes")
    assert sum(data.manifest.sizes) > 3 * 2**20
    with pytest.warns(RuntimeWarning, match="maxmemory-policy allkeys-lru"):
        loader = hotset.loader(
            data,
            system=system,
            cache=evicting.url,
            cache_bytes=3_500_000,
            batch_size=16,
            num_workers=2,
            verify=True,
        )
    with loader:
        rows = _byte_exact_epochs(loader, range(3))
        client = evicting.client()
        assert int(client.info("stats")["evicted_keys"]) > 0  # the server did evict
        assert sum(r["rebuild_reads"] for r in rows) > 0  # evicted entries, read again
        assert sum(r["cache_resyncs"] for r in rows) > 0  # the counter, repaired
        used = int(client.get(f"hotset:{loader.namespace}:used-bytes") or 0)
        assert used <= loader.capacity_bytes


def test_training_survives_a_client_that_meddles(dataset_dir: Path, redis_url: str) -> None:
    """Another client raises the namespace's byte counter and shortens an entry."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with hotset.loader(
        data, system="lru", cache=redis_url, cache_bytes=0.3, batch_size=16, num_workers=2
    ) as loader:
        _byte_exact_epochs(loader, range(1))
        raw = redis.Redis.from_url(redis_url)
        counter = f"hotset:{loader.namespace}:used-bytes"
        entries = [k for k in raw.scan_iter(match=f"hotset:{loader.namespace}:*")]
        entries = [k for k in entries if k != counter.encode()]
        raw.set(entries[0], b"short")
        raw.incrby(counter, loader.capacity_bytes)
        rows = _byte_exact_epochs(loader, range(1, 3))
        assert sum(r["cache_resyncs"] for r in rows) > 0
        stored = sum(
            int(raw.strlen(k))
            for k in raw.scan_iter(match=f"hotset:{loader.namespace}:*")
            if k != counter.encode()
        )
        assert int(raw.get(counter) or 0) == stored <= loader.capacity_bytes


@pytest.mark.parametrize("cache", [None, "memory", "shm"])
def test_a_namespace_needs_a_redis_cache(dataset_dir: Path, cache: str | None) -> None:
    """The embedded cache is private to the loader: a sharing key there would be ignored."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    options: dict[str, Any] = {} if cache is None else {"cache": cache, "cache_bytes": 0.3}
    with pytest.raises(HotsetError, match=r"namespace='team'.*give a Redis cache"):
        hotset.loader(data, system="lru", namespace="team", **options)
