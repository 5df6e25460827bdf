"""SHADE's adaptivity: shuffle epochs on a steep loss decline or stagnant accuracy,
repetitions that follow the loss; and the authors' aggressive mode."""

from __future__ import annotations

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.samplers.base import EpochContext
from hotset.samplers.pads import Adaptivity, PADSSampler
from hotset.samplers.pads_schedule import adaptive_schedule


def _schedule(loss: tuple[float, ...], acc: tuple[float, ...] = ()) -> tuple[str, float]:
    s = adaptive_schedule(loss, acc, rep_factor=3.0, steep_decline=0.25, stagnant=0.002)
    return s.kind, s.rep_factor


def test_no_trend_yet_uses_the_full_rep_factor() -> None:
    assert _schedule(()) == ("pads", 3.0)
    assert _schedule((2.0,)) == ("pads", 3.0)


def test_a_steep_decline_shuffles() -> None:
    assert _schedule((2.0, 1.2))[0] == "shuffle"  # -40%


def test_stagnant_accuracy_shuffles() -> None:
    assert _schedule((2.0, 1.9), (0.5, 0.6, 0.601, 0.6, 0.601))[0] == "shuffle"
    assert _schedule((2.0, 1.9), (0.5, 0.6, 0.7, 0.8))[0] == "pads"  # still improving


def test_repetitions_grow_as_the_loss_flattens() -> None:
    reps = [_schedule((1.0, 1.0 - d))[1] for d in (0.2, 0.1, 0.05, 0.0)]
    assert reps == sorted(reps) and reps[0] < reps[-1] == 3.0
    assert all(r >= 1 and (2 * r) % 1 == 0 for r in reps)


def test_a_shuffle_epoch_trains_every_sample_once() -> None:
    n = 300
    sampler = PADSSampler(n, seed=2, rep_factor=3.0, adaptivity=Adaptivity(adaptive=True))
    ctx = EpochContext(
        epoch=3,
        scores=np.linspace(1, 5, n),
        train_loss=(2.0, 1.0),  # a steep decline
        resident=frozenset(range(100)),
    )
    order = sampler.order(ctx)
    assert sampler.last_schedule.kind == "shuffle" and sorted(order.tolist()) == list(range(n))


def test_not_adaptive_ignores_the_loss() -> None:
    n = 300
    ctx = EpochContext(epoch=3, scores=np.linspace(1, 5, n), train_loss=(2.0, 1.0))
    plain = PADSSampler(n, seed=2, rep_factor=3.0)
    assert plain.order(ctx).tolist() == PADSSampler(n, seed=2, rep_factor=3.0).order(ctx).tolist()
    assert plain.last_schedule.kind == "pads"


def test_authors_aggressive_mode_trains_the_head_of_each_ranks_own_draw() -> None:
    n, world = 200, 2
    scores = np.r_[np.full(20, 50.0), np.ones(n - 20)]  # 20 samples dominate the draw
    ctx = {"scores": scores, "val_accuracy": (0.1, 0.2, 0.3), "world_size": world}
    head = PADSSampler(n, seed=1, aggressive="head")
    blocks = PADSSampler(n, seed=1, aggressive="blocks")
    shards = {
        name: [s.shard(EpochContext(epoch=4, rank=r, **ctx)) for r in range(world)]  # type: ignore[arg-type]
        for name, s in (("head", head), ("blocks", blocks))
    }
    assert head.mode(EpochContext(epoch=4, **ctx))[0] == "aggressive"  # type: ignore[arg-type]
    # each rank's head is led by the dominant samples; blocks give rank 1 the tail
    for shard in shards["head"]:
        assert set(shard[:10].tolist()) <= set(range(20))
    assert not set(shards["blocks"][1][-10:].tolist()) <= set(range(20))


@pytest.mark.parametrize(
    ("option", "value"),
    [("adaptive", "yes"), ("steep_decline", 0), ("stagnant", -1.0), ("aggressive", "tail")],
)
def test_bad_adaptivity_options_are_named(option: str, value: object) -> None:
    with pytest.raises(HotsetError, match=option):
        if option == "aggressive":
            PADSSampler(10, aggressive=value)  # type: ignore[arg-type]
        else:
            PADSSampler(10, adaptivity=Adaptivity(**{option: value}))  # type: ignore[arg-type]
