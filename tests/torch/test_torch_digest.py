"""Loaders with digests on one Redis namespace: same content shared, other content unseen.

Real data sets on disk (synth, and a copy of one under other names and ids),
digests made by the real command (`hotset data digest`), a real redis-server,
and real DataLoader worker processes (``num_workers=2``).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import hotset
from cli_support import run_cli
from digest_support import renamed_copy
from hotset.data import Manifest, SynthConfig, make_synth
from hotset.data.digest import DIGEST_JSON, Digest, capability_of
from hotset.errors import HotsetError, IntegrityError
from redis_support import RedisProcess


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Data sets ``a``, ``a2`` (a's bytes renamed, ids reversed) and ``b``, each digested."""
    root = tmp_path_factory.mktemp("digestloader")
    make_synth(root / "a", SynthConfig(n=64, image_size=8, classes=4, seed=31), workers=1)
    make_synth(root / "b", SynthConfig(n=64, image_size=8, classes=4, seed=32), workers=1)
    renamed_copy(root / "a", root / "a2")
    for name in ("a", "a2", "b"):
        code, out = run_cli("data", "digest", str(root / name), "-q")
        assert code == 0, out
    return {name: root / name for name in ("a", "a2", "b")}


def _loader(path: Path, url: str, workers: int, **options: Any) -> hotset.torch.HotsetLoader:
    return hotset.loader(
        hotset.open_dataset(path, decode="bytes"),
        system=options.pop("system", "lru"),
        cache=url,
        cache_bytes=options.pop("cache_bytes", 1.0),
        batch_size=16,
        num_workers=workers,
        namespace="team",
        digest=options.pop("digest", path / DIGEST_JSON),
        **options,
    )


def _epoch(loader: hotset.torch.HotsetLoader, epoch: int) -> dict[str, int]:
    """One epoch; every sample checked byte for byte against its file; the epoch's counts."""
    store, manifest = loader.data.store, loader.data.manifest
    loader.set_epoch(epoch)
    seen: list[int] = []
    for x, _, ids, _ in loader:
        loader.update(ids, torch.ones(len(ids)))
        assert x == [store.read(manifest.keys[s]) for s in ids.tolist()]
        seen += ids.tolist()
    assert sorted(seen) == list(range(len(manifest)))
    row = loader.report()[-1]
    return {k: int(v) for k, v in row.items() if isinstance(v, int | np.integer)}


def _pool_bytes(client: Any, namespace: str) -> tuple[set[str], int]:
    caps, total = set(), 0
    for rkey in client.scan_iter(match=f"hotset:{namespace}:b2:*"):
        caps.add(rkey.decode().rsplit(":", 1)[1])
        total += int(client.strlen(rkey))
    return caps, total


def _caps(path: Path) -> set[str]:
    m = Manifest.load(path)
    return {capability_of((path / k).read_bytes()) for k in m.keys}


@pytest.mark.parametrize(
    ("workers", "context"),
    # spawn: workers get the content-addressed cache handle by pickle, digest included
    [(0, None), (2, None), (2, "spawn")],
)
def test_identical_content_is_shared(
    sets: dict[str, Path],
    redis_url: str,
    redis_server: RedisProcess,
    workers: int,
    context: str | None,
) -> None:
    a_total = int(Manifest.load(sets["a"]).sizes.sum())
    with _loader(sets["a"], redis_url, workers, multiprocessing_context=context) as first:
        assert first.namespace == "team@content"
        one = _epoch(first, 0)
        assert one["pool_hits"] == 0 and one["storage_reads"] == 64
    caps, stored = _pool_bytes(redis_server.client(), "team@content")
    assert caps == _caps(sets["a"]) and stored == a_total
    # Another user's copy: other file names, other ids, same bytes.
    with _loader(sets["a2"], redis_url, workers, multiprocessing_context=context) as second:
        assert second.namespace == "team@content"
        two = _epoch(second, 0)
        assert two["pool_hits"] == 64
        assert two["pool_bytes"] == a_total
        assert two["storage_requests"] == 0  # nothing read from storage
        assert two["integrity_errors"] == 0
    caps, stored = _pool_bytes(redis_server.client(), "team@content")
    assert caps == _caps(sets["a"]) and stored == a_total  # no second copy


@pytest.mark.parametrize("workers", [0, 2])
def test_different_content_gets_none_of_the_others_bytes(
    sets: dict[str, Path], redis_url: str, redis_server: RedisProcess, workers: int
) -> None:
    b_total = int(Manifest.load(sets["b"]).sizes.sum())
    both = int(Manifest.load(sets["a"]).sizes.sum()) + b_total  # one budget holds both
    with _loader(sets["a"], redis_url, workers, cache_bytes=both) as first:
        _epoch(first, 0)
    with _loader(sets["b"], redis_url, workers, cache_bytes=both) as other:
        assert other.namespace == "team@content"  # one namespace for both users
        for epoch in range(2):
            row = _epoch(other, epoch)
            assert row["pool_hits"] == 0 and row["pool_bytes"] == 0
            assert row["integrity_errors"] == 0 and row["refused_puts"] == 0
        assert sum(r["storage_bytes"] for r in other.report()) >= b_total
        assert sum(r["exact_hits"] for r in other.report()) > 0  # its own entries serve it
    caps, _ = _pool_bytes(redis_server.client(), "team@content")
    assert caps == _caps(sets["a"]) | _caps(sets["b"])


def test_a_digest_of_other_data_is_refused(sets: dict[str, Path], redis_url: str) -> None:
    with pytest.raises(HotsetError, match=r"made from other bytes: sample 0"):
        _loader(sets["b"], redis_url, 0, digest=sets["a"] / DIGEST_JSON)
    with pytest.raises(HotsetError, match="made from other bytes"):
        _loader(sets["a2"], redis_url, 0, digest=sets["a"] / DIGEST_JSON)  # same bytes, other ids
    with pytest.raises(HotsetError, match=r"digest must be a digest file's path .* got 3\.5"):
        _loader(sets["a"], redis_url, 0, digest=3.5)
    with pytest.raises(HotsetError, match=r"cannot read digest .*nope\.json"):
        _loader(sets["a"], redis_url, 0, digest=sets["a"] / "nope.json")
    with pytest.raises(HotsetError, match="cache 'memory' with a digest"):
        hotset.loader(
            hotset.open_dataset(sets["a"], decode="bytes"),
            cache="50%",
            batch_size=16,
            digest=sets["a"] / DIGEST_JSON,
        )


def test_bytes_that_do_not_hash_to_the_digest_stop_training(
    sets: dict[str, Path], redis_url: str, redis_server: RedisProcess
) -> None:
    m = Manifest.load(sets["a"])
    wrong = Digest.from_hex(  # the manifest's xxh3s, capabilities of nothing
        [secrets.token_hex(32) for _ in range(64)],
        list(m.hashes),
        count=64,
        dataset=m.identity(),
        source="wrong.json",
    )
    with _loader(sets["a"], redis_url, 0, digest=wrong) as job:
        job.set_epoch(0)
        with pytest.raises(IntegrityError, match=r"BLAKE2b .* digest wrong\.json"):
            for _ in job:
                pass
    assert _pool_bytes(redis_server.client(), "team@content") == (set(), 0)


def test_whole_chunks_are_addressed_by_their_own_blake2b(
    tmp_path: Path, redis_url: str, redis_server: RedisProcess
) -> None:
    from chunked_system import registered
    from hotset.data.chunks import ChunkLayout

    path = tmp_path / "packed"
    make_synth(path, SynthConfig(n=48, image_size=8, classes=4, seed=33), workers=1)
    assert run_cli("data", "digest", str(path), "-q")[0] == 0  # before packing: no chunks
    assert run_cli("data", "pack", str(path), "--chunk-size", "8", "-q")[0] == 0
    with registered():
        with pytest.raises(HotsetError, match="holds 0 chunk capabilities"):
            _loader(path, redis_url, 0, system="chunk_lru_whole")
        assert run_cli("data", "digest", str(path), "-q")[0] == 0
        with _loader(path, redis_url, 2, system="chunk_lru_whole", cache_bytes=0.5) as job:
            rows = [_epoch(job, epoch) for epoch in range(3)]
    assert sum(r["exact_hits"] for r in rows) > 0  # hits cut from cached whole chunks
    assert all(r["rebuild_reads"] == 0 and r["integrity_errors"] == 0 for r in rows)
    layout = ChunkLayout.load(path)
    chunk_size = {
        capability_of((path / k).read_bytes()): int(size)
        for k, size in zip(layout.chunk_keys, layout.chunk_sizes, strict=True)
    }
    caps, stored = _pool_bytes(redis_server.client(), "team@content")
    assert caps and caps <= chunk_size.keys()  # every entry is a whole chunk, by its content
    assert stored == sum(chunk_size[c] for c in caps)
