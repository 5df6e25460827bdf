"""RandomSampler: a seeded permutation per epoch, the same on every rank before sharding."""

from __future__ import annotations

import numpy as np

from hotset.samplers import EpochContext
from hotset.samplers.random import RandomSampler


def test_each_epoch_is_a_permutation_fixed_by_seed_and_epoch() -> None:
    a, b = RandomSampler(1000, seed=5), RandomSampler(1000, seed=5)
    e0, e1 = a.order(EpochContext(epoch=0)), a.order(EpochContext(epoch=1))
    assert sorted(e0.tolist()) == list(range(1000))
    assert e0.dtype == np.int64
    assert e0.tolist() == b.order(EpochContext(epoch=0)).tolist()  # another instance agrees
    assert e0.tolist() != e1.tolist()
    assert a.order(EpochContext(epoch=0)).tolist() == e0.tolist()  # no hidden state
    assert e0.tolist() != RandomSampler(1000, seed=6).order(EpochContext(epoch=0)).tolist()


def test_ranks_split_the_same_global_order() -> None:
    sampler = RandomSampler(10, seed=1)
    shards = [sampler.order(EpochContext(epoch=3, rank=r, world_size=4)) for r in range(4)]
    assert {len(s) for s in shards} == {3}  # 10 ids over 4 ranks: padded to 12
    merged = np.empty(12, dtype=np.int64)
    for r, s in enumerate(shards):
        merged[r::4] = s
    glob = sampler.global_order(3)
    assert merged[:10].tolist() == glob.tolist()
    assert merged[10:].tolist() == glob[:2].tolist()  # the padding wraps to the start


def test_drop_last_skips_the_tail_instead() -> None:
    sampler = RandomSampler(10, seed=1, drop_last=True)
    shards = [sampler.order(EpochContext(epoch=0, rank=r, world_size=4)) for r in range(4)]
    assert {len(s) for s in shards} == {2}
    assert len(set(np.concatenate(shards).tolist())) == 8
