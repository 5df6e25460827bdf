"""Sharding across ranks, checked against torch's own DistributedSampler."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data.distributed import DistributedSampler

from hotset.errors import HotsetError
from hotset.samplers.shard import shard, shard_len


@settings(max_examples=80, deadline=None)
@given(
    length=st.integers(0, 40),
    world_size=st.integers(1, 9),
    drop_last=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_shard_equals_distributed_sampler(
    length: int, world_size: int, drop_last: bool, seed: int
) -> None:
    order = np.random.default_rng(seed).permutation(length) + 1000  # ids != positions
    for rank in range(world_size):
        torch_positions = list(
            DistributedSampler(
                range(length),
                num_replicas=world_size,
                rank=rank,
                shuffle=False,
                drop_last=drop_last,
            )
        )
        expected = order[torch_positions].tolist() if length else []
        got = shard(order, rank, world_size, drop_last=drop_last)
        assert got.tolist() == expected
        assert len(got) == shard_len(length, world_size, drop_last=drop_last)


def test_padding_wraps_and_every_rank_gets_the_same_count() -> None:
    order = np.array([10, 11, 12, 13, 14])
    shards = [shard(order, r, 3).tolist() for r in range(3)]
    assert shards == [[10, 13], [11, 14], [12, 10]]
    assert [shard(order, r, 3, drop_last=True).tolist() for r in range(3)] == [[10], [11], [12]]


@pytest.mark.parametrize(("rank", "world"), [(-1, 2), (2, 2), (0, 0)])
def test_bad_topology_is_refused(rank: int, world: int) -> None:
    with pytest.raises(HotsetError, match=r"rank|world_size"):
        shard(np.arange(4), rank, world)
