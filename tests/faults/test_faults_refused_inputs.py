"""Inputs the issue found taken as they came, or failing deep inside: each is now a
HotsetError naming the argument (issue #41, item 8).

``cache=10**15`` gave a raw ``OSError`` (ENOMEM), an ``ftp://`` URL a raw
``socket.gaierror``, ``num_workers=1_000_000`` was accepted and forked until killed,
a ``chunk_size`` above int64 in ``chunks.json`` was accepted, ``cache="0.9"`` meant 0
bytes, and with ``from_dataset(sizes=)`` a batch's ``x`` was ``[inputs, labels]``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

import hotset
from hotset.data import SynthConfig, make_synth
from hotset.errors import HotsetError


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("inputs") / "ds"
    make_synth(path, SynthConfig(n=48, image_size=8, classes=2, seed=1), workers=1)
    return path


def _children() -> set[int]:
    out: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as fh:
                out |= {int(p) for p in fh.read().split()}
        except OSError:
            continue
    return out


def test_a_cache_larger_than_dev_shm_is_named(data_dir: Path) -> None:
    data = hotset.open_dataset(data_dir, decode="bytes")
    with pytest.raises(HotsetError, match=r"cache=.*/dev/shm") as caught:
        hotset.loader(data, system="lru", cache=10**15)
    assert not isinstance(caught.value, OSError)


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1:1/data", "ftp://nonexistent.invalid/data"],  # refused; does not resolve
)
def test_a_url_whose_opening_fails_at_the_network_is_named(url: str) -> None:
    for opening in (hotset.open_dataset, lambda u: hotset.loader(u, system="lru")):
        with pytest.raises(HotsetError, match=f"cannot open '{url}'"):
            opening(url)


def test_num_workers_beyond_the_cap_is_refused_before_any_fork(data_dir: Path) -> None:
    from hotset.torch.options import max_workers

    data = hotset.open_dataset(data_dir, decode="bytes")
    before = _children()
    with pytest.raises(HotsetError, match=r"num_workers=1000000 is more than .* \d+"):
        hotset.loader(data, system="lru", num_workers=1_000_000)
    assert _children() <= before
    cap = max_workers()
    assert cap >= 32 and cap == max(32, 8 * (os.cpu_count() or 1))
    hotset.loader(data, system="lru", cache=1.0, batch_size=4, num_workers=2).close()  # fine


@pytest.mark.parametrize("value", [2**64, 2**63, 10**30])
def test_a_chunk_size_beyond_int64_in_chunks_json_is_named(tmp_path: Path, value: int) -> None:
    from packed_support import packed_synth

    root = packed_synth(tmp_path / "ds", n=32, seed=2, chunk_size=8)
    doc = json.loads((root / "chunks.json").read_text())
    doc["chunk_size"] = value
    (root / "chunks.json").write_text(json.dumps(doc))
    with pytest.raises(HotsetError, match=r"chunks\.json.*chunk_size: must be at most 2\*\*63"):
        hotset.open_dataset(root, decode="bytes")


@pytest.mark.parametrize(
    ("cache", "hint"),
    [
        ("0.9", r"cache=0\.9 \(a float\) or a percentage \('90%'\)"),
        (".5", r"cache=0\.5 \(a float\)"),
        ("1.5", r"for bytes give a unit \('1\.5gb'\)"),
    ],
)
def test_a_fraction_written_as_a_string_is_refused_with_the_forms_that_work(
    data_dir: Path, cache: str, hint: str
) -> None:
    """It meant 0 bytes (a cache that holds nothing), silently."""
    data = hotset.open_dataset(data_dir, decode="bytes")
    with pytest.raises(HotsetError, match=rf"cache='{cache}': a string without a unit"):
        hotset.loader(data, system="lru", cache=cache)
    with pytest.raises(HotsetError, match=hint):
        hotset.loader(data, system="lru", cache=cache)
    total = sum(int(s) for s in data.manifest.sizes)
    for good in (0.9, "90%"):
        with hotset.loader(data, system="lru", cache=good, batch_size=4) as ld:
            assert ld.capacity_bytes == int(total * 0.9)


class _Pairs(torch.utils.data.Dataset[Any]):
    """(input, label) items, as most Datasets return them."""

    def __len__(self) -> int:
        return 24

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return torch.full((2, 3), float(i)), i % 3


@pytest.mark.parametrize("workers", [0, 2])
def test_from_dataset_with_sizes_gives_the_inputs_as_x(workers: int) -> None:
    from hotset.data.itemcodec import encode_item

    ds = _Pairs()
    sizes = [len(encode_item(ds[i])) for i in range(len(ds))]
    data = hotset.from_dataset(ds, sizes=sizes, labels=[i % 3 for i in range(len(ds))])
    options = {"cache": 1.0, "batch_size": 8, "verify": False, "num_workers": workers}
    with hotset.loader(data, system="lru", **options) as ld:
        for x, y, ids, _w in ld:
            assert isinstance(x, torch.Tensor) and x.shape == (len(ids), 2, 3)
            assert torch.equal(x, torch.stack([ds[i][0] for i in ids.tolist()]))
            assert y.tolist() == [i % 3 for i in ids.tolist()]
