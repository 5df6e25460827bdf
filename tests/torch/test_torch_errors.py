"""Bad input is caught when the loader is built (or when update is called), by name."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
import torch

import hotset
from hotset import HotsetError


@pytest.fixture
def data(dataset_dir: Path) -> hotset.torch.HotsetDataset:
    return hotset.open_dataset(dataset_dir, decode="bytes")


def test_budget_smaller_than_one_batch(data: hotset.torch.HotsetDataset) -> None:
    largest = int(sorted(data.manifest.sizes)[-1])
    with pytest.raises(HotsetError, match="smaller than one batch needs"):
        hotset.loader(data, system="lru", cache=largest * 3, batch_size=16)
    # the no-cache baseline needs no budget at all
    hotset.loader(data, system="pytorch", batch_size=16).close()
    with pytest.raises(HotsetError, match="smaller than one batch needs"):
        hotset.loader(data, system="shade", cache=largest, batch_size=16)


def test_unreachable_redis(data: hotset.torch.HotsetDataset) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(HotsetError, match="cannot reach redis"):
        hotset.loader(data, system="lru", cache=f"redis://127.0.0.1:{port}/0", cache_bytes="1mb")
    with pytest.raises(HotsetError, match="needs cache_bytes"):
        hotset.loader(data, system="lru", cache=f"redis://127.0.0.1:{port}/0")


def test_manifest_not_matching_store(dataset_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "ds"
    shutil.copytree(dataset_dir, copy)
    data = hotset.open_dataset(copy)
    key = data.manifest.keys[17]
    (copy / key).write_bytes((copy / key).read_bytes()[:-3])
    with pytest.raises(HotsetError, match=rf"key '{key}' \(id 17\) has \d+ bytes"):
        hotset.loader(data, system="lru", cache="1mb", batch_size=16)
    (copy / key).unlink()
    with pytest.raises(HotsetError, match=rf"key '{key}' \(id 17\) is missing"):
        hotset.loader(data, system="lru", cache="1mb", batch_size=16)
    # the sampled check looks at every key of a small dataset, so it catches it too
    with pytest.raises(HotsetError, match="is missing"):
        hotset.loader(data, system="lru", cache="1mb", batch_size=16, check_store="sample")


def test_unknown_system_and_bad_options(data: hotset.torch.HotsetDataset) -> None:
    with pytest.raises(HotsetError, match="unknown system 'nope'"):
        hotset.loader(data, system="nope", cache="1mb")
    with pytest.raises(HotsetError, match="needs the whole future"):
        hotset.loader(data, system="belady", cache="1mb")
    with pytest.raises(HotsetError, match="cannot drive a real cache"):
        hotset.loader(data, system="oracle", cache="1mb")
    with pytest.raises(HotsetError, match="batch_size must be an integer >= 1"):
        hotset.loader(data, system="lru", cache="1mb", batch_size=0)
    with pytest.raises(HotsetError, match="persistent_workers=True needs num_workers > 0"):
        hotset.loader(data, system="lru", cache="1mb", persistent_workers=True)
    with pytest.raises(HotsetError, match="decode must be one of"):
        hotset.open_dataset(data.source, decode="pixels")
    with pytest.raises(HotsetError, match="cannot parse byte count"):
        hotset.loader(data, system="lru", cache="lots")
    with pytest.raises(HotsetError, match="data must be a HotsetDataset"):
        hotset.torch.HotsetLoader(object(), system="lru", cache="1mb")  # type: ignore[arg-type]


def test_update_with_ids_never_yielded(data: hotset.torch.HotsetDataset) -> None:
    with hotset.loader(data, system="shade", cache="1mb", batch_size=16) as loader:
        with pytest.raises(HotsetError, match="no epoch in progress"):
            loader.update(torch.tensor([0]), torch.tensor([1.0]))
        it = iter(loader)
        _, _, ids, _ = next(it)
        others = sorted(set(range(200)) - set(ids.tolist()))
        with pytest.raises(HotsetError, match=f"sample id {others[0]} was not yielded"):
            loader.update(torch.tensor([others[0]]), torch.tensor([1.0]))
        with pytest.raises(HotsetError, match="sample id 999 is not in the dataset"):
            loader.update(torch.tensor([999]), torch.tensor([1.0]))
        with pytest.raises(HotsetError, match="got 1 values for 2 ids"):
            loader.update(ids[:2], torch.tensor([1.0]))
        with pytest.raises(HotsetError, match="not finite"):
            loader.update(ids[:1], torch.tensor([float("nan")]))
        loader.update(ids, torch.ones(len(ids)))
        with pytest.raises(HotsetError, match="already given"):
            loader.update(ids[:1], torch.ones(1))
