"""IISSampler: iCACHE's importance sampling keeps fewer ids outside full epochs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.samplers import EpochContext, iis
from hotset.samplers.iis import IISSampler


def _losses(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).exponential(1.0, n)


def test_authors_constants_are_pinned() -> None:
    assert (iis.BETA, iis.WINDOW, iis.WARM_UP, iis.REUSE_FACTOR) == (0.33, 1024, 5, 3)
    s = IISSampler(10)
    assert (s.beta, s.window, s.warm_up, s.reuse_factor) == (0.33, 1024, 5, 3)


def test_full_epochs_are_warm_up_and_every_reuse_factor_th() -> None:
    s = IISSampler(10)
    assert [e for e in range(13) if s.is_full_epoch(e)] == [0, 1, 2, 3, 4, 6, 9, 12]


def test_full_epoch_reads_everyone_and_a_selection_epoch_reads_fewer() -> None:
    n = 5000
    s = IISSampler(n, seed=3)
    losses = _losses(n)
    full = s.order(EpochContext(epoch=6, losses=losses))
    assert sorted(full.tolist()) == list(range(n))
    sel = s.order(EpochContext(epoch=7, losses=losses))
    assert len(set(sel.tolist())) == len(sel)  # a subset, no repetitions
    # E[p^0.33] over a uniform percentile is 1/1.33 = 0.75; the first 1024 always kept
    expected = (1024 + (n - 1024) / 1.33) / n
    assert abs(len(sel) / n - expected) < 0.03
    assert s.last_kept == len(sel) and not s.last_full


def test_first_window_ids_are_always_kept_and_hard_ones_are_favoured() -> None:
    n = 4096
    s = IISSampler(n, seed=1)
    losses = _losses(n, 2)
    ctx = EpochContext(epoch=7, losses=losses)
    perm = s.epoch_rng(7).permutation(n)
    kept = set(s.order(ctx).tolist())
    assert set(perm[:1024].tolist()) <= kept
    tail = perm[1024:]
    kept_tail = np.array([i in kept for i in tail.tolist()])
    hard = losses[tail] > np.median(losses)
    assert kept_tail[hard].mean() > kept_tail[~hard].mean() + 0.1


def test_order_is_pure_and_ranks_split_the_selection() -> None:
    n = 3000
    losses = _losses(n)
    a, b = IISSampler(n, seed=9), IISSampler(n, seed=9)
    ctx = EpochContext(epoch=8, losses=losses)
    assert a.order(ctx).tolist() == b.order(ctx).tolist() == a.order(ctx).tolist()
    assert a.order(ctx).tolist() != a.order(EpochContext(epoch=10, losses=losses)).tolist()
    whole = a.global_order(ctx)
    shards = [a.order(EpochContext(epoch=8, rank=r, world_size=2, losses=losses)) for r in (0, 1)]
    assert set(np.concatenate(shards).tolist()) == set(whole.tolist())


def test_unknown_losses_are_kept_and_scores_stand_in() -> None:
    n = 2000
    s = IISSampler(n, seed=0)
    nan = np.full(n, np.nan)
    assert len(s.order(EpochContext(epoch=7, losses=nan))) == n
    assert len(s.order(EpochContext(epoch=7))) == n  # no importance: a full epoch
    by_scores = s.order(EpochContext(epoch=7, scores=_losses(n)))
    assert len(by_scores) < n


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"beta": 0}, "beta"),
        ({"window": 0}, "window"),
        ({"warm_up": -1}, "warm_up"),
        ({"reuse_factor": True}, "reuse_factor"),
    ],
)
def test_bad_options_name_the_value(kwargs: dict[str, object], bad: str) -> None:
    with pytest.raises(HotsetError, match=bad):
        IISSampler(10, **kwargs)  # type: ignore[arg-type]


def test_bad_importance_is_refused() -> None:
    s = IISSampler(4)
    with pytest.raises(HotsetError, match="one value per sample"):
        s.order(EpochContext(epoch=7, losses=np.ones(3)))
    with pytest.raises(HotsetError, match="sample id 2"):
        s.order(EpochContext(epoch=7, losses=np.array([1.0, 1.0, -1.0, 1.0])))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(20, 400),
    k=st.integers(1, 8),
    world=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_coverage_epochs_asks_for_every_id_in_every_window_of_k_epochs(
    n: int, k: int, world: int, seed: int
) -> None:
    """Fixed losses (the easy stay easy), a small window so selection bites: with
    ``coverage_epochs=k`` the ranks' orders hold every id in every k consecutive epochs."""
    s = IISSampler(n, seed=seed, window=8, warm_up=0, reuse_factor=10**6, coverage_epochs=k)
    losses = np.random.default_rng(seed).exponential(1.0, n) ** 3  # a long easy tail
    last = np.full(n, -1, dtype=np.int64)
    gap = np.zeros(n, dtype=np.int64)
    for epoch in range(1, 3 * k + 2):  # epoch 0 is full (reuse_factor divides it)
        ctx = EpochContext(epoch=epoch, world_size=world, losses=losses, last_epoch=last.copy())
        asked = np.concatenate([s.order(replace(ctx, rank=r)) for r in range(world)])
        last[asked] = epoch
        gap = np.where(last == epoch, 0, gap + 1)
        assert gap.max() <= k - 1
    assert s.guard_note() is not None and "coverage_epochs=0" in str(s.guard_note())


def test_coverage_epochs_adds_only_the_due_ids_to_the_papers_selection() -> None:
    n = 3000
    losses = _losses(n, 4)
    last = np.random.default_rng(5).integers(-1, 8, size=n)
    ctx = EpochContext(epoch=8, losses=losses, last_epoch=last)
    paper = IISSampler(n, seed=2).order(ctx)
    guarded = IISSampler(n, seed=2, coverage_epochs=4)
    got = guarded.order(ctx)
    due = np.flatnonzero(last <= 8 - 4)
    assert set(got.tolist()) == set(paper.tolist()) | set(due.tolist())
    assert guarded.last_due == len(set(due.tolist()) - set(paper.tolist())) > 0
    kept = np.isin(got, paper)
    assert got[kept].tolist() == paper.tolist()  # same ids, same order: only additions
    assert IISSampler(n, seed=2).guard_note() is None


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bad_coverage_epochs_is_named(bad: object) -> None:
    with pytest.raises(HotsetError, match="coverage_epochs"):
        IISSampler(10, coverage_epochs=bad)  # type: ignore[arg-type]
