"""Scorers: SHADE log-rank, percentile^beta, raw and batch loss, loss decomposition."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.importance.scorers import (
    BatchLossScorer,
    LogRankScorer,
    LossScorer,
    PercentileScorer,
    Scorer,
    per_sample_cross_entropy,
)
from hotset.importance.table import ImportanceTable


def test_all_scorers_follow_the_protocol() -> None:
    for scorer in (LogRankScorer(), PercentileScorer(), LossScorer(), BatchLossScorer()):
        assert isinstance(scorer, Scorer)
        assert scorer.name


def test_log_rank_paper_example() -> None:
    # SHADE §4.2.1: B1 = <4, 5, 6> with losses <0.3, 0.5, 0.4>; sample 5 ranks highest
    table = ImportanceTable(10)
    scores = LogRankScorer().score([4, 5, 6], [0.3, 0.5, 0.4], table)
    assert scores.tolist() == [math.log(10), math.log(12), math.log(11)]


def test_log_rank_ties_follow_batch_order() -> None:
    scores = LogRankScorer().score([0, 1, 2, 3], [0.5, 0.1, 0.5, 0.5], ImportanceTable(4))
    assert scores.tolist() == [math.log(11), math.log(10), math.log(12), math.log(13)]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(0, 50, allow_nan=False), min_size=1, max_size=40, unique=True),
    st.randoms(use_true_random=False),
)
def test_log_rank_scores_follow_the_id_through_any_permutation(
    losses: list[float], rnd: object
) -> None:
    """Each id's score depends on its own loss's rank, not on where it sits in the batch.

    SHADE's public code filed scores by position in the raw draw; feeding the
    same (id, loss) pairs in a different order would then move scores between
    ids. Here the table must end up identical whatever the order.
    """
    n = len(losses)
    ids = np.arange(100, 100 + n)
    expected = np.empty(n)
    expected[np.argsort(losses)] = np.log(np.arange(n) + 10.0)
    perm = list(range(n))
    rnd.shuffle(perm)  # type: ignore[attr-defined]
    table = ImportanceTable(200)
    scorer = LogRankScorer()
    p_ids, p_losses = ids[perm], np.asarray(losses)[perm]
    table.update(p_ids, p_losses, epoch=0, scores=scorer.score(p_ids, p_losses, table))
    assert np.allclose(table.snapshot().scores[ids], expected)


def test_log_rank_rejects_empty_and_bad_batches() -> None:
    table = ImportanceTable(5)
    with pytest.raises(HotsetError, match="empty"):
        LogRankScorer().score([], [], table)
    with pytest.raises(HotsetError, match="sample id 2"):
        LogRankScorer().score([1, 2], [0.1, float("nan")], table)
    with pytest.raises(HotsetError, match="got 1 values for 2 ids"):
        LogRankScorer().score([1, 2], [0.1], table)
    with pytest.raises(HotsetError, match="unknown sample id 7"):
        LogRankScorer().score([7], [0.1], table)
    with pytest.raises(HotsetError, match="bias"):
        LogRankScorer(bias=0)


def test_percentile_against_the_batch_alone() -> None:
    scores = PercentileScorer(beta=0.5).score(
        [0, 1, 2, 3], [4.0, 1.0, 3.0, 2.0], ImportanceTable(4)
    )
    assert np.allclose(scores, np.sqrt([1.0, 0.25, 0.75, 0.5]))


def test_percentile_uses_the_last_window_losses() -> None:
    table = ImportanceTable(10, history=8)
    table.update([0, 1, 2], [10.0, 20.0, 30.0], epoch=0)
    scorer = PercentileScorer(beta=1.0, window=4)
    # reference = last 4 of [10, 20, 30, 5, 25] = [20, 30, 5, 25]
    scores = scorer.score([3, 4], [5.0, 25.0], table)
    assert scores.tolist() == [0.25, 0.75]
    # a bigger window sees the whole table history
    scores = PercentileScorer(beta=1.0, window=100).score([3, 4], [5.0, 25.0], table)
    assert scores.tolist() == [0.2, 0.8]
    assert table.snapshot().version == 1  # scoring never writes


def test_percentile_bad_parameters() -> None:
    for kwargs in ({"beta": 0.0}, {"beta": float("nan")}, {"window": 0}, {"window": 2.5}):
        with pytest.raises(HotsetError):
            PercentileScorer(**kwargs)  # type: ignore[arg-type]


def test_loss_and_batch_loss_scorers() -> None:
    table = ImportanceTable(5)
    assert LossScorer().score([3, 1], [0.5, 2.0], table).tolist() == [0.5, 2.0]
    assert BatchLossScorer().score([3, 1, 0], [0.5, 2.0, 0.5], table).tolist() == [1.0] * 3
    assert BatchLossScorer().score([], [], table).size == 0
    with pytest.raises(HotsetError):
        LossScorer().score([0], [float("inf")], table)


def test_per_sample_cross_entropy_decomposes_the_batch_loss() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 4, generator=gen, requires_grad=True)
    targets = torch.tensor([0, 3, 1, 1, 2, 0])
    per = per_sample_cross_entropy(logits, targets)
    assert per.shape == (6,)
    manual = -torch.log_softmax(logits, dim=1)[torch.arange(6), targets]
    assert torch.allclose(per, manual)
    assert torch.allclose(per.mean(), F.cross_entropy(logits, targets))  # Eq. 5
    per.mean().backward()
    assert logits.grad is not None


def test_per_sample_cross_entropy_shape_errors() -> None:
    with pytest.raises(HotsetError, match="logits"):
        per_sample_cross_entropy(torch.zeros(4), torch.zeros(4, dtype=torch.long))
    with pytest.raises(HotsetError, match="targets"):
        per_sample_cross_entropy(torch.zeros(4, 3), torch.zeros(5, dtype=torch.long))
