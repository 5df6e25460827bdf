"""The DataLoader's keywords hotset.loader has no option for get an answer, not a TypeError.

A script ported from ``DataLoader(data, batch_size=64, shuffle=True)`` keeps its
``shuffle=True`` (what every system does already); ``shuffle=False``,
``sampler=``, ``batch_sampler=``, ``generator=`` are errors that say what the
loader does instead, before any user Dataset is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import BatchSampler, DistributedSampler, RandomSampler, SequentialSampler
from user_support import Folder

import hotset
from hotset.errors import HotsetError


def _ids(loader: Any, epochs: int = 2) -> list[list[int]]:
    out = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        out.append([i for _, _, ids, _ in loader for i in ids.tolist()])
    return out


@pytest.mark.parametrize("value", [True, np.True_])
def test_shuffle_true_is_accepted_and_changes_nothing(dataset_dir: Path, value: Any) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with hotset.loader(data, system="lru", batch_size=16, seed=4) as plain:
        want = _ids(plain)
    with hotset.loader(data, system="lru", batch_size=16, seed=4, shuffle=value) as loader:
        assert _ids(loader) == want
        assert not hasattr(loader.options, "shuffle")
    assert want[0] != want[1] != sorted(want[0])  # a fresh random order each epoch


def test_in_order_true_is_accepted(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with hotset.loader(data, system="lru", batch_size=16, in_order=True) as loader:
        assert len(_ids(loader, 1)[0]) == len(data)


REFUSED: list[tuple[str, Any, str]] = [
    ("shuffle", False, r"shuffle=False\): the system decides .* seed= .*hotset\.eval_loader"),
    ("shuffle", None, r"shuffle=None\): the system decides"),
    ("sampler", "random", r"sampler=<.*RandomSampler.*takes no sampler; drop sampler="),
    ("sampler", "distributed", r"DistributedSampler is not needed.*rank= and world_size="),
    ("sampler", None, r"sampler=None\).*takes no sampler"),
    ("batch_sampler", "batches", r"batch_sampler=.*batches of batch_size="),
    ("generator", "generator", r"generator=.*pass seed=<int>"),
    ("in_order", False, r"in_order=False\): batches always come in the order"),
    ("pin_memory_device", "cuda", r"pin_memory_device='cuda'\).*pin_memory=True"),
]


def _value(kind: Any, n: int) -> Any:
    """The keyword's value as a ported script passes it (samplers built over the data)."""
    if kind == "random":
        return RandomSampler(range(n))
    if kind == "distributed":
        return DistributedSampler(range(n), num_replicas=2, rank=0)
    if kind == "batches":
        return BatchSampler(SequentialSampler(range(n)), batch_size=16, drop_last=False)
    if kind == "generator":
        return torch.Generator().manual_seed(0)
    return kind


@pytest.mark.parametrize(("name", "kind", "says"), REFUSED)
def test_a_dataloader_keyword_is_answered_with_what_hotset_does(
    dataset_dir: Path, name: str, kind: Any, says: str
) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with pytest.raises(HotsetError, match=says):
        hotset.loader(data, system="lru", batch_size=16, **{name: _value(kind, len(data))})


def test_the_answer_comes_before_a_users_dataset_is_read(dataset_dir: Path) -> None:
    manifest = hotset.open_dataset(dataset_dir, decode="bytes").manifest

    class Counting(Folder):
        reads = 0

        def read(self, index: int) -> bytes:
            type(self).reads += 1
            return super().read(index)

    users = Counting(dataset_dir, manifest.keys, [int(v) for v in manifest.labels])
    with pytest.raises(HotsetError, match="shuffle=False"):
        hotset.loader(users, batch_size=16, shuffle=False)
    assert Counting.reads == 0


def test_an_unknown_keyword_is_still_a_type_error(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with pytest.raises(TypeError, match=r"'shuffel' \(did you mean"):
        hotset.loader(data, shuffel=True)


def test_the_loader_docstring_lists_the_answered_keywords() -> None:
    doc = hotset.loader.__doc__
    assert doc is not None
    for name in ("shuffle", "sampler", "batch_sampler", "generator", "in_order"):
        assert f"``{name}``:" in doc, name
