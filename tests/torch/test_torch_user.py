"""A user's own map-style Dataset through hotset: ids are indices, bytes are what it returns."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import redis
import torch
from user_support import Augmenting, Folder, Nested, PilFolder, Stream, pickle_payload

import hotset
from hotset.cachestore import CacheKey
from hotset.cachestore.redis_store import RedisCache
from hotset.torch.user import encode_item


def _folder(dataset_dir: Path, cls: type = Folder) -> Any:
    manifest = hotset.open_dataset(dataset_dir, decode="bytes").manifest
    return cls(dataset_dir, manifest.keys, [int(v) for v in manifest.labels])


def _epochs(loader: Any, epochs: int) -> list[dict[str, Any]]:
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        seen: list[int] = []
        for x, y, ids, _ in loader:
            assert len(x) == len(y) == len(ids)
            seen += ids.tolist()
        assert sorted(seen) == list(range(len(loader.dataset)))  # each index once
    rows: list[dict[str, Any]] = loader.report()
    return rows


@pytest.mark.parametrize("workers", [0, 2])
def test_items_are_cached_and_delivered_exactly(dataset_dir: Path, workers: int) -> None:
    folder = _folder(dataset_dir)
    with hotset.loader(
        folder, system="lru", cache="50%", batch_size=16, num_workers=workers
    ) as loader:
        assert loader.dataset is folder
        for epoch in range(2):
            loader.set_epoch(epoch)
            for x, y, ids, _ in loader:
                want = torch.stack([folder[i][0] for i in ids.tolist()])
                assert torch.equal(x, want)
                assert y.tolist() == [folder.labels[i] for i in ids.tolist()]
        rows = loader.report()
    assert rows[1]["exact_hits"] > 0 and rows[1]["unique_ids_trained"] == len(folder)


def test_raw_bytes_make_the_same_decisions_as_the_manifest(dataset_dir: Path) -> None:
    """Same system and seed: the user's read() path and the manifest path agree exactly."""
    folder = _folder(dataset_dir)
    mine = hotset.from_dataset(folder, read=folder.read, decode="image", labels=folder.labels)
    assert np.array_equal(mine.manifest.sizes, hotset.open_dataset(dataset_dir).manifest.sizes)
    rows = {}
    for name, data in (("user", mine), ("manifest", hotset.open_dataset(dataset_dir))):
        with hotset.loader(data, system="lru", cache="30%", batch_size=16, seed=4) as ld:
            rows[name] = _epochs(ld, 3)
    for key in ("exact_hits", "storage_reads", "storage_bytes"):
        assert [r[key] for r in rows["user"]] == [r[key] for r in rows["manifest"]], key
    assert sum(r["exact_hits"] for r in rows["user"]) > 0


def test_items_are_encoded_deterministically(dataset_dir: Path) -> None:
    folder = _folder(dataset_dir)
    assert encode_item(folder[3]) == encode_item(folder[3])


def test_random_augmentation_in_getitem_is_named(dataset_dir: Path) -> None:
    data = hotset.from_dataset(_folder(dataset_dir, Augmenting))
    with (
        hotset.loader(data, system="lru", cache="50%", batch_size=16, check_store="off") as ld,
        pytest.raises(hotset.IntegrityError, match="random augmentation"),
    ):
        ld.set_epoch(0)
        for _ in ld:
            pass


def test_sizes_skip_the_checks_only_when_the_loader_is_told(dataset_dir: Path) -> None:
    """No hashes, nothing to verify by: verify is never turned off behind the user's back."""
    folder = _folder(dataset_dir)
    sizes = [len(folder.read(i)) for i in range(len(folder))]
    data = hotset.from_dataset(
        folder, read=folder.read, decode="image", sizes=sizes, labels=folder.labels
    )
    for unhashed in (data, data.subset(range(50))):
        with pytest.raises(hotset.HotsetError, match=r"no hashes .* pass verify=False"):
            hotset.loader(unhashed, system="lru", cache="30%", batch_size=16)
    with hotset.loader(data, system="lru", cache="30%", batch_size=16, verify=False) as ld:
        assert _epochs(ld, 2)[1]["exact_hits"] > 0


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda f: Stream(), "IterableDataset has no index"),
        (lambda f: 42, "map-style Dataset"),
        (lambda f: [], "empty"),
    ],
)
def test_what_cannot_be_wrapped_is_a_clear_error(dataset_dir: Path, make: Any, match: str) -> None:
    with pytest.raises(hotset.HotsetError, match=match):
        hotset.from_dataset(make(_folder(dataset_dir)))


def test_read_and_decode_come_together(dataset_dir: Path) -> None:
    folder = _folder(dataset_dir)
    with pytest.raises(hotset.HotsetError, match="decode="):
        hotset.from_dataset(folder, read=folder.read)
    with pytest.raises(hotset.HotsetError, match="needs read="):
        hotset.from_dataset(folder, decode="image")
    bad = hotset.from_dataset(
        folder, read=lambda i: "text", decode="bytes", sizes=[4] * 200, labels=None
    )
    with pytest.raises(hotset.HotsetError, match="must return bytes"):
        bad.store.read("0")


# -- items are cached as data, never as code (issue #25 item 2) ----------------------


def test_nested_items_come_back_exactly_from_workers(dataset_dir: Path) -> None:
    folder = _folder(dataset_dir, Nested)
    with hotset.loader(
        folder, system="lru", cache="100%", batch_size=16, num_workers=2, collate_inputs=list
    ) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            for x, y, ids, _ in loader:
                for got, i in zip(x, ids.tolist(), strict=True):
                    want = folder[i][0]
                    assert encode_item(got) == encode_item(want)
                    assert torch.equal(got["image"], want["image"])
                    assert got["extra"]["name"] == folder.keys[i]
                assert y.tolist() == [folder.labels[i] for i in ids.tolist()]
        assert loader.report()[1]["exact_hits"] == len(folder)


def test_an_unsupported_item_is_refused_while_measuring(dataset_dir: Path) -> None:
    folder = _folder(dataset_dir, PilFolder)
    with pytest.raises(hotset.HotsetError) as caught:
        hotset.from_dataset(folder)
    message = str(caught.value)
    assert message.startswith("cannot cache PilFolder[")
    assert "PIL.PngImagePlugin.PngImageFile" in message
    assert "Pass read= (the stored bytes) and decode= to hotset.from_dataset" in message
    # the way out works: the stored bytes, decoded as PIL images by hotset
    data = hotset.from_dataset(folder, read=folder.read, decode="pil", labels=folder.labels)
    assert data[0][0].mode == "RGB" and data[0][1] == folder.labels[0]


def _plant(loader: hotset.torch.HotsetLoader, url: str, canary: Path) -> int:
    """Another client of the server overwrites every cached item with a pickle payload."""
    cache = loader.cache
    assert isinstance(cache, RedisCache)
    manifest = loader.data.manifest
    client = redis.Redis.from_url(url)
    planted = 0
    try:
        for sid in range(len(manifest)):
            name = cache.redis_key(CacheKey(sid, manifest.hashes[sid]))
            if client.exists(name):
                size = int(manifest.sizes[sid])
                client.set(name, pickle_payload(canary, size))
                planted += 1
    finally:
        client.close()
    return planted


@pytest.mark.parametrize("mode", ["verify", "no-verify", "sizes"])
def test_a_pickle_planted_in_redis_runs_no_code(
    dataset_dir: Path, redis_url: str, tmp_path: Path, mode: str
) -> None:
    """A real redis-server, the loader's own keys, two DataLoader workers: the payload
    (which would create a file) is dropped by the hash check or refused by the decoder,
    and training goes on from storage (with verify off it stopped on the decoder's error)."""
    canary = tmp_path / "canary"
    pickle.loads(pickle_payload(tmp_path / "control", 900))
    assert (tmp_path / "control").exists()  # the payload is live when unpickled
    folder = _folder(dataset_dir)
    data: Any = folder
    if mode == "sizes":
        sizes = [len(encode_item(folder[i])) for i in range(200)]
        data = hotset.from_dataset(folder, sizes=sizes, labels=folder.labels)
    verify = mode == "verify"
    options: dict[str, Any] = {"cache_bytes": "100%", "namespace": f"planted-{mode}"}
    with hotset.loader(
        data, system="lru", cache=redis_url, batch_size=16, num_workers=2, verify=verify, **options
    ) as ld:
        ld.set_epoch(0)
        assert sum(len(ids) for _, _, ids, _ in ld) == len(folder)
        assert _plant(ld, redis_url, canary) == len(folder)
        # With verify the xxh3 check drops each entry before decoding; without, the
        # decoder refuses it: either way it is read again from storage, and counted.
        ld.set_epoch(1)
        for x, _, ids, _ in ld:
            # unmeasured (sizes=) too, x is the inputs: it was [inputs, labels] before
            assert torch.equal(x, torch.stack([folder[i][0] for i in ids.tolist()]))
        assert ld.report()[1]["integrity_errors"] == len(folder)
    assert not canary.exists(), "a pickle read back from the cache ran code"
