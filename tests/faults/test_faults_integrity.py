"""Integrity by default (issue "Survive faults"): bad bytes never reach training silently.

Real files, real DataLoader workers, a real redis-server. A file corrupted in the
store stops training with one clean :class:`IntegrityError` naming its key and id
(from a worker too: not torch's "Caught ... in DataLoader worker" wrapper). Cache
entries poisoned by another writer -- a second handle on the shared-memory segment,
another Redis client in the same namespace, under the right key -- are never
delivered: every sample training receives is byte-exact against the files, and the
report counts ``integrity_errors``. ``verify=False`` is the explicit opt-out.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import redis

import hotset
from hotset.cachestore import CacheKey
from hotset.cachestore.redis_store import RedisCache
from hotset.cachestore.shm import SharedMemoryCache
from hotset.data import SynthConfig, make_synth
from hotset.errors import IntegrityError

N = 256
BATCH = 32
POISONED = 20


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("integrity") / "synth"
    make_synth(path, SynthConfig(n=N, image_size=8, seed=3), workers=1)
    return path


def _files(data: hotset.torch.HotsetDataset, root: Path) -> list[bytes]:
    return [(root / key).read_bytes() for key in data.manifest.keys]


def _corrupt_copy(dataset: Path, tmp_path: Path, sid: int) -> tuple[Path, str]:
    """A copy of ``dataset`` with one byte of sample ``sid``'s file flipped (same size)."""
    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    key = hotset.open_dataset(copy, decode="bytes").manifest.keys[sid]
    blob = bytearray((copy / key).read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    (copy / key).write_bytes(bytes(blob))
    return copy, key


def _epoch(loader: hotset.torch.HotsetLoader, epoch: int) -> list[tuple[int, bytes]]:
    loader.set_epoch(epoch)
    return [
        (sid, blob) for x, _, ids, _ in loader for blob, sid in zip(x, ids.tolist(), strict=True)
    ]


def _junk(data: bytes) -> bytes:
    """Other bytes of the same size: the byte counters stay exact, only the content lies."""
    return bytes(b ^ 0x5A for b in data)


# -- storage ------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, 2])
def test_a_corrupted_file_is_one_clean_integrity_error(
    dataset: Path, tmp_path: Path, workers: int
) -> None:
    sid = 77
    copy, key = _corrupt_copy(dataset, tmp_path, sid)
    data = hotset.open_dataset(copy, decode="bytes")
    with (
        hotset.loader(data, system="lru", cache=0.2, batch_size=BATCH, num_workers=workers) as ld,
        pytest.raises(IntegrityError) as caught,
    ):
        _epoch(ld, 0)
    message = str(caught.value)
    print(f"workers={workers}: {type(caught.value).__name__}: {message}")
    assert type(caught.value) is IntegrityError  # the error itself, not torch's wrapper
    assert f"{key!r} (id {sid})" in message
    assert message.count(key) == 1
    for wrapper_text in ("Caught", "DataLoader worker", "Traceback", "IntegrityError"):
        assert wrapper_text not in message


def test_verify_false_delivers_a_corrupted_file(dataset: Path, tmp_path: Path) -> None:
    sid = 77
    copy, _ = _corrupt_copy(dataset, tmp_path, sid)
    data = hotset.open_dataset(copy, decode="bytes")
    files = _files(data, copy)
    with hotset.loader(data, system="lru", cache=0.2, batch_size=BATCH, verify=False) as ld:
        delivered = dict(_epoch(ld, 0))
    assert sorted(delivered) == list(range(N))
    assert delivered[sid] == files[sid]  # the flipped byte reached training: opted out


# -- a poisoned cache ---------------------------------------------------------------


def _poison_shm(loader: hotset.torch.HotsetLoader, files: list[bytes], ids: list[int]) -> None:
    """A second handle on the loader's segment stores junk under the right keys."""
    assert isinstance(loader.cache, SharedMemoryCache)
    other = SharedMemoryCache(name=loader.cache.name, create=False, verify=False)
    try:
        keys = [CacheKey(s, loader.data.manifest.hashes[s]) for s in ids]
        assert all(other.contains(k) for k in keys)  # the first epoch cached them
        other.delete_many(keys)
        other.put_many([(k, _junk(files[k.sample_id])) for k in keys])
        assert other.get_many(keys) == [_junk(files[s]) for s in ids]
    finally:
        other.close()


def _poison_redis(
    loader: hotset.torch.HotsetLoader, files: list[bytes], ids: list[int], url: str
) -> None:
    """Another Redis client overwrites the loader's entries, under their keys, with junk."""
    cache = loader.cache
    assert isinstance(cache, RedisCache)
    client = redis.Redis.from_url(url)
    try:
        for s in ids:
            name = cache.redis_key(CacheKey(s, loader.data.manifest.hashes[s]))
            assert client.exists(name)  # the first epoch cached it
            client.set(name, _junk(files[s]))
    finally:
        client.close()


def _run_poisoned(
    dataset: Path, *, workers: int, verify: bool, cache: str, redis_url: str | None = None
) -> tuple[list[bytes], list[int], list[tuple[int, bytes]], list[dict[str, Any]], Any]:
    data = hotset.open_dataset(dataset, decode="bytes")
    files = _files(data, dataset)
    ids = list(range(5, 5 + 3 * POISONED, 3))
    options: dict[str, Any] = {"cache": "100%"}
    if redis_url is not None:
        options = {"cache": redis_url, "cache_bytes": "100%", "namespace": f"poison-{workers}"}
    with hotset.loader(
        data, system="lru", batch_size=BATCH, num_workers=workers, verify=verify, **options
    ) as ld:
        first = _epoch(ld, 0)
        assert all(blob == files[s] for s, blob in first)
        if cache == "shm":
            _poison_shm(ld, files, ids)
        else:
            assert redis_url is not None
            _poison_redis(ld, files, ids, redis_url)
        delivered = _epoch(ld, 1)
        rows = ld.report()
        assert ld.cache is not None
        after = ld.cache.get_many([CacheKey(s, data.manifest.hashes[s]) for s in ids])
    return files, ids, delivered, rows, after


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("cache", ["shm", "redis"])
def test_a_poisoned_cache_entry_is_never_delivered(
    dataset: Path, request: pytest.FixtureRequest, workers: int, cache: str
) -> None:
    url = request.getfixturevalue("redis_url") if cache == "redis" else None
    files, ids, delivered, rows, after = _run_poisoned(
        dataset, workers=workers, verify=True, cache=cache, redis_url=url
    )
    assert sorted(s for s, _ in delivered) == list(range(N))
    bad = [s for s, blob in delivered if blob != files[s]]
    assert not bad, f"poisoned bytes reached training for ids {bad}"
    row = rows[1]
    print(
        f"{cache} workers={workers}: integrity_errors={row['integrity_errors']}, "
        f"rebuild_reads={row['rebuild_reads']}, exact_hits={row['exact_hits']}"
    )
    # every cached id is requested once in the second epoch: each poisoned entry was met once
    assert row["integrity_errors"] == POISONED
    assert row["rebuild_reads"] >= POISONED
    assert rows[0]["integrity_errors"] == 0
    # dropped and put back: the cache holds the true bytes again
    assert after == [files[s] for s in ids]


def test_verify_false_opts_out_of_checking_the_cache(dataset: Path) -> None:
    files, ids, delivered, rows, _ = _run_poisoned(dataset, workers=0, verify=False, cache="shm")
    got = dict(delivered)
    assert [got[s] for s in ids] == [_junk(files[s]) for s in ids]  # served as stored
    assert rows[1]["integrity_errors"] == 0
