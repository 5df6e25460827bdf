"""The locality test of randomness_support has power, and a stated false-rejection rate.

It must reject what chunk-reading systems can do to an order (a DIESEL-like
chunk-by-chunk read, chunk-mates kept within part of the epoch, the same order
every epoch), each caught by its own statistic, and accept real uniform
permutations. The size is the one the systems' tests use: 2,000 ids in chunks of
16, four epochs.
"""

from __future__ import annotations

import numpy as np
import pytest

from hotset.data.chunks import ChunkLayout
from layout_support import make_layout
from randomness_support import ALPHA, locality_verdict

N, CHUNK, EPOCHS = 2000, 16, 4


@pytest.fixture(scope="module")
def layout() -> ChunkLayout:
    """A default pack: a seeded shuffle cut into chunks (seed 7: orders below use others)."""
    return make_layout(np.full(N, 10), CHUNK, seed=7)


def diesel_like(layout: ChunkLayout, seed: int) -> np.ndarray:
    """Chunks in a random order, each shuffled, read chunk by chunk (DIESEL-like)."""
    rng = np.random.default_rng([seed, 1])
    chunks = rng.permutation(layout.n_chunks)
    return np.concatenate([rng.permutation(layout.members(int(c))) for c in chunks])


def two_halves(layout: ChunkLayout, seed: int) -> np.ndarray:
    """Half the chunks, all their members shuffled, then the other half: chunk-mates stay
    within half an epoch, and next to each other only twice as often as uniform."""
    rng = np.random.default_rng([seed, 2])
    chunks = rng.permutation(layout.n_chunks)
    halves = np.array_split(chunks, 2)
    return np.concatenate(
        [rng.permutation(np.concatenate([layout.members(int(c)) for c in h])) for h in halves]
    )


def uniform_orders(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng([seed, 3])
    return [rng.permutation(N) for _ in range(EPOCHS)]


def test_the_locality_test_rejects_a_diesel_like_order(layout: ChunkLayout) -> None:
    """The issue's counter-example: the first-moment test accepted it 9 times in 10."""
    verdict = locality_verdict([diesel_like(layout, e) for e in range(EPOCHS)], layout.chunk_of)
    assert verdict.rejects, verdict.describe()
    assert verdict.observed.adjacency > 0.9  # 15 of 16 pairs inside a chunk
    assert verdict.observed.spread is not None and verdict.observed.spread < 0.01


def test_chunk_mates_kept_within_half_an_epoch_are_told_by_their_spread(
    layout: ChunkLayout,
) -> None:
    verdict = locality_verdict([two_halves(layout, e) for e in range(EPOCHS)], layout.chunk_of)
    assert verdict.rejects, verdict.describe()
    assert verdict.p_values["chunk_spread"] <= ALPHA / 3, verdict.describe()


def test_the_same_order_every_epoch_is_told_by_the_rank_correlation(layout: ChunkLayout) -> None:
    """A sampler that ignores the epoch: each epoch alone is a uniform permutation."""
    order = uniform_orders(11)[0]
    verdict = locality_verdict([order] * EPOCHS, layout.chunk_of)
    assert verdict.rejects, verdict.describe()
    assert verdict.p_values["epoch_rank_corr"] <= ALPHA / 3
    assert verdict.p_values["same_chunk_adjacency"] > ALPHA  # not what gives it away


def test_uniform_permutations_pass_across_seeds(layout: ChunkLayout) -> None:
    """At most ALPHA of uniform orders are rejected: over 12 seeds, expect none (P(any)
    is about 1.2%); the seeds are fixed, so this is no coin toss in CI."""
    verdicts = [locality_verdict(uniform_orders(s), layout.chunk_of) for s in range(12)]
    rejected = [v.describe() for v in verdicts if v.rejects]
    assert not rejected, rejected


def test_p_values_of_uniform_orders_are_calibrated() -> None:
    """Each statistic's Monte Carlo p-value is (nearly) uniform under the null: at most
    about 5% of them fall at or below 0.05 and 20% at or below 0.2 (binomial bounds of
    more than 4 standard deviations). A count statistic (adjacency) ties with null draws,
    and a tie counts against rejecting, so it errs on the accepting side (11 and 59 of
    400 here), never on the rejecting one."""
    n, epochs, trials = 256, 3, 400
    groups = make_layout(np.full(n, 10), 16, seed=5).chunk_of
    rng = np.random.default_rng(17)
    ps = [
        locality_verdict([rng.permutation(n) for _ in range(epochs)], groups, draws=199).p_values
        for _ in range(trials)
    ]
    for key in ps[0]:
        low = sum(p[key] <= 0.05 for p in ps)
        assert 4 <= low <= 40, (key, low)
        assert 40 <= sum(p[key] <= 0.2 for p in ps) <= 110, key


def test_only_permutations_are_tested(layout: ChunkLayout) -> None:
    order = uniform_orders(1)[0].copy()
    order[0] = order[1]
    with pytest.raises(AssertionError, match="epoch 0: not a permutation"):
        locality_verdict([order], layout.chunk_of)
