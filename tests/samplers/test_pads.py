"""PADS: seeded global draw, rank shards, mode switch, cache-aware repetition."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.samplers.base import EpochContext
from hotset.samplers.pads import LS_PARAM_MAX, PADSSampler

N = 200


def _scores(seed: int = 0) -> np.ndarray:
    return np.log(np.random.default_rng(seed).integers(0, 64, size=N) + 10.0)


def _ctx(**kwargs: object) -> EpochContext:
    base: dict[str, object] = {"epoch": 3, "scores": _scores(), "train_loss": (2.0, 1.5, 1.2)}
    base.update(kwargs)
    return EpochContext(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mode_ctx", "mode"), [({}, "relaxed"), ({"train_loss": (2.0, 1.5, 1.0)}, "aggressive")]
)
@pytest.mark.parametrize(("n", "world"), [(N, 4), (101, 3), (7, 7), (5, 8)])
def test_rank_shards_partition_one_global_draw(
    mode_ctx: dict, mode: str, n: int, world: int
) -> None:
    scores = np.linspace(1, 5, n)
    length = math.ceil(n / world)
    shards = []
    draws = []
    for rank in range(world):
        # a fresh sampler per rank, as in separate processes
        sampler = PADSSampler(n, seed=11)
        ctx = EpochContext(epoch=2, rank=rank, world_size=world, scores=scores, **mode_ctx)
        order = sampler.order(ctx)
        assert sampler.last_mode == mode
        assert len(order) == length
        shards.append(order)
        draws.append(sampler.global_draw(ctx))
        assert len(draws[-1]) == length * world
    assert all(np.array_equal(draw, draws[0]) for draw in draws)
    assert sorted(np.concatenate(shards).tolist()) == sorted(draws[0].tolist())


def test_same_seed_same_order_other_seed_other_order() -> None:
    ctx = _ctx()
    a = PADSSampler(N, seed=1).order(ctx)
    b = PADSSampler(N, seed=1).order(ctx)
    c = PADSSampler(N, seed=2).order(ctx)
    d = PADSSampler(N, seed=1).order(_ctx(epoch=4))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.array_equal(a, d)


def test_epoch_zero_is_uniform_and_relaxed() -> None:
    sampler = PADSSampler(N, seed=0)
    order = sampler.order(EpochContext(epoch=0))
    assert len(order) == N
    assert sampler.last_mode == "relaxed" and sampler.last_signal == "none"
    assert sampler.last_ls_param == 0.0
    assert np.array_equal(sampler.weights(EpochContext(epoch=0)), np.ones(N))


def test_draw_follows_the_scores() -> None:
    scores = np.ones(N)
    scores[7] = 1000.0
    draw = PADSSampler(N, seed=0).global_draw(EpochContext(epoch=1, scores=scores))
    share = np.mean(draw == 7)
    assert 0.75 < share < 0.9  # expected 1000 / 1199 = 0.834


def test_ls_param_schedule() -> None:
    sampler = PADSSampler(N, seed=0, ls_init_frac=0.01)
    assert sampler.ls_param(()) == 0.0
    assert sampler.ls_param((2.0,)) == pytest.approx(0.02)
    assert sampler.ls_param((2.0, 1.0)) == pytest.approx(0.02 * math.exp(-0.5))
    assert sampler.ls_param((2.0, 1.0, 1.5)) == pytest.approx(0.02 * math.exp(-0.5) * math.exp(0.5))
    assert sampler.ls_param((0.0, 1.0)) == 0.0  # no relative change from a zero loss
    for bad in ((float("nan"),), (1.0, -1.0), (float("inf"),)):
        with pytest.raises(HotsetError, match="train_loss"):
            sampler.ls_param(bad)
    # a loss rising from a tiny one (a fuzzed checkpoint found it) stays finite: the ceiling
    assert sampler.ls_param((1.175494351e-38, 1.05)) == LS_PARAM_MAX
    assert sampler.ls_param((1.175494351e-38, 1.05, 1.0)) <= LS_PARAM_MAX
    huge = PADSSampler(N, seed=0).order(_ctx(train_loss=(1.175494351e-38, 1.05)))
    assert len(huge) == N and set(huge.tolist()) <= set(range(N))
    # ls_param shifts every weight
    ctx = _ctx(train_loss=(2.0,))
    assert np.allclose(sampler.weights(ctx), _scores() + 0.02)


@pytest.mark.parametrize(
    ("val", "loss", "mode", "signal"),
    [
        ((50.0, 60.0, 70.0), (), "aggressive", "val_accuracy"),
        ((70.0, 60.0, 50.0), (), "relaxed", "val_accuracy"),
        ((60.0, 60.0), (3.0, 2.0), "relaxed", "val_accuracy"),
        ((50.0,), (3.0, 2.0), "relaxed", "val_accuracy"),
        # only the last three changes count: +80, then -10, -1, -1
        ((10.0, 90.0, 80.0, 79.0, 78.0), (), "relaxed", "val_accuracy"),
        ((90.0, 10.0, 11.0, 12.0, 13.0), (), "aggressive", "val_accuracy"),
        ((), (3.0, 2.0, 1.0), "aggressive", "train_loss"),
        ((), (1.0, 2.0, 3.0), "relaxed", "train_loss"),
        ((), (1.0, 0.5, 0.6, 0.7, 0.8), "relaxed", "train_loss"),
        ((), (3.0,), "relaxed", "none"),
        ((), (), "relaxed", "none"),
    ],
)
def test_mode_switch(val: tuple, loss: tuple, mode: str, signal: str) -> None:
    sampler = PADSSampler(N, seed=0)
    sampler.order(_ctx(val_accuracy=val, train_loss=loss))
    assert (sampler.last_mode, sampler.last_signal) == (mode, signal)


def test_aggressive_groups_by_frequency_relaxed_strides() -> None:
    world = 4
    aggressive = _ctx(val_accuracy=(1.0, 2.0), world_size=world)
    sampler = PADSSampler(N, seed=5)
    draw = sampler.global_draw(aggressive)
    freq = Counter(draw.tolist())
    counts = [freq[i] for i in draw.tolist()]
    assert counts == sorted(counts, reverse=True)
    # the copies of one id are contiguous, so a hard sample stays on one rank
    seen: set[int] = set()
    for prev, cur in zip(draw[:-1].tolist(), draw[1:].tolist(), strict=True):
        if cur != prev:
            assert cur not in seen
            seen.add(prev)
    length = N // world
    for rank in range(world):
        ctx = _ctx(val_accuracy=(1.0, 2.0), world_size=world, rank=rank)
        assert np.array_equal(sampler.shard(ctx), draw[rank * length : (rank + 1) * length])
    relaxed = _ctx(val_accuracy=(2.0, 1.0), world_size=world, rank=2)
    assert np.array_equal(sampler.shard(relaxed), sampler.global_draw(relaxed)[2::world])


def _repetition_case(rep: float) -> tuple[np.ndarray, np.ndarray, set[int]]:
    sampler = PADSSampler(N, seed=3, rep_factor=rep)
    resident = set(range(0, N, 10))  # 10% of the ids
    ctx = _ctx(resident=frozenset(resident), world_size=2, rank=1)
    return sampler.shard(ctx), sampler.order(ctx), resident


@pytest.mark.parametrize(("rep", "whole", "extra"), [(1, 1, False), (2, 2, False), (2.5, 2, True)])
def test_repetition_counts(rep: float, whole: int, extra: bool) -> None:
    shard, order, resident = _repetition_case(rep)
    hits = [sid for sid in shard.tolist() if sid in resident]
    misses = [sid for sid in shard.tolist() if sid not in resident]
    assert hits, "the case must have cached samples"
    expected: Counter[int] = Counter()
    for k, sid in enumerate(hits):
        expected[sid] += whole + (1 if extra and k < len(hits) // 2 else 0)
    total = sum(expected.values())
    assert total == len(hits) * whole + (len(hits) // 2 if extra else 0)
    assert len(order) == len(shard)
    head, tail = order[:total].tolist(), order[total:].tolist()
    assert Counter(head) == expected  # cached samples first, repeated
    assert all(sid not in resident for sid in tail)  # then misses only
    assert Counter(tail) <= Counter(misses)
    assert len(tail) == len(shard) - total


def test_repetition_beyond_the_epoch_is_cut_to_length() -> None:
    sampler = PADSSampler(N, seed=3, rep_factor=3)
    ctx = _ctx(resident=frozenset(range(N)))
    order = sampler.order(ctx)
    assert len(order) == N
    assert Counter(order.tolist()) <= Counter(
        {k: 3 * v for k, v in Counter(sampler.shard(ctx).tolist()).items()}
    )


@pytest.mark.parametrize("rep", [0, 0.5, 0.7, -1, 1.25, float("nan"), float("inf"), True, "2"])
def test_bad_rep_factor(rep: object) -> None:
    with pytest.raises(HotsetError, match="rep_factor"):
        PADSSampler(N, seed=0, rep_factor=rep)  # type: ignore[arg-type]


def test_good_rep_factors() -> None:
    for rep in (1, 1.5, 2, 2.5, 3, 10):
        assert PADSSampler(N, seed=0, rep_factor=rep).rep_factor == rep


def test_plain_importance_sampling_ignores_the_cache() -> None:
    sampler = PADSSampler(N, seed=4, pads=False)
    ctx = _ctx(resident=frozenset(range(0, N, 2)), val_accuracy=(1.0, 2.0), world_size=2, rank=1)
    order = sampler.order(ctx)
    assert sampler.last_mode == "relaxed"
    assert np.array_equal(order, sampler.global_draw(ctx)[1::2])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rank": 2, "world_size": 2}, "rank 2"),
        ({"world_size": 0}, "world_size"),
        ({"scores": np.ones(N - 1)}, "one value per sample"),
        ({"scores": -np.ones(N)}, "weight"),
        ({"scores": np.zeros(N), "train_loss": ()}, "nothing to draw"),
        ({"val_accuracy": (1.0, float("nan"))}, "val_accuracy"),
    ],
)
def test_bad_contexts(kwargs: dict, message: str) -> None:
    with pytest.raises(HotsetError, match=message):
        PADSSampler(N, seed=0).order(_ctx(**kwargs))


def test_bad_constructor_options() -> None:
    with pytest.raises(HotsetError, match="ls_init_frac"):
        PADSSampler(N, ls_init_frac=-0.1)
    with pytest.raises(HotsetError, match="batch_size"):
        PADSSampler(N, batch_size=0)
    with pytest.raises(HotsetError, match="dataset size"):
        PADSSampler(0)
