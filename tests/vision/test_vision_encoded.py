"""EncodedBatch: one buffer and its offsets hold each sample's bytes exactly, across processes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from hotset.errors import HotsetError
from hotset.vision import EncodedBatch


def test_each_sample_is_its_bytes_and_views_cover_the_buffer(photo_blobs: list[bytes]) -> None:
    blobs = [*photo_blobs[:5], b"", b"xyz"]
    batch = EncodedBatch.from_blobs(blobs, seed=9)
    assert len(batch) == 7 and batch.seed == 9
    assert batch.nbytes == sum(map(len, blobs)) == batch.data.numel()
    assert [batch.sample(i) for i in range(7)] == blobs
    assert batch.sample(-1) == b"xyz"
    views = batch.views()
    assert [bytes(v.numpy()) for v in views] == blobs
    assert all(v.dtype == torch.uint8 and v.dim() == 1 for v in views)
    assert views[0].untyped_storage().data_ptr() == batch.data.untyped_storage().data_ptr()
    assert batch.with_seed(3).seed == 3 and batch.with_seed(3).sample(1) == blobs[1]
    with pytest.raises(IndexError):
        batch.sample(7)


def test_an_empty_batch_and_bad_offsets() -> None:
    empty = EncodedBatch.from_blobs([])
    assert len(empty) == 0 and empty.views() == []
    data = torch.zeros(10, dtype=torch.uint8)
    with pytest.raises(HotsetError, match="from 0 to 10"):
        EncodedBatch(data, np.array([0, 4, 9]))
    with pytest.raises(HotsetError, match="must not decrease"):
        EncodedBatch(data, np.array([0, 6, 4, 10]))
    with pytest.raises(HotsetError, match="uint8 tensor"):
        EncodedBatch(torch.zeros(10, dtype=torch.int32), np.array([0, 10]))


class _Batches(torch.utils.data.Dataset[EncodedBatch]):
    def __init__(self, blobs: list[bytes]) -> None:
        self.blobs = blobs

    def __len__(self) -> int:
        return 3

    def __getitem__(self, i: int) -> EncodedBatch:
        return EncodedBatch.from_blobs(self.blobs[i * 4 : (i + 1) * 4], seed=i, shared=True)


def test_a_batch_crosses_from_a_worker_process_intact(photo_blobs: list[bytes]) -> None:
    """Made in a real DataLoader worker (its buffer in shared memory), read in this one."""
    loader = DataLoader(_Batches(photo_blobs), batch_size=None, num_workers=2)
    got = list(loader)
    assert [b.seed for b in got] == [0, 1, 2]
    for i, batch in enumerate(got):
        assert [batch.sample(k) for k in range(4)] == photo_blobs[i * 4 : (i + 1) * 4]
        assert batch.data.is_shared()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinning needs a CUDA device")
def test_pin_memory_keeps_the_bytes(photo_blobs: list[bytes]) -> None:
    batch = EncodedBatch.from_blobs(photo_blobs[:3], seed=1)
    pinned = batch.pin_memory()
    assert pinned.is_pinned() and not batch.is_pinned()
    assert [pinned.sample(i) for i in range(3)] == photo_blobs[:3] and pinned.seed == 1
