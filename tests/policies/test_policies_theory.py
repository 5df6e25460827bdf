"""Hit ratios under fresh random permutations, against what theory says they must be.

N ids, a cache of C = c·N items, a new permutation every epoch (10 epochs):

* LRU: at the start of an epoch the cache holds the previous epoch's last C
  ids. After i accesses of the new epoch (all distinct), C - i of those are
  still cached and all are still unread, so access i hits with probability
  (C - i)/(N - i): E[hits per epoch] = Σ_{i<C} (C - i)/(N - i) ≈ N(c + (1-c)ln(1-c)),
  whose leading term is the c²/2 quoted in DESIGN.md (it underestimates at c = 0.4).
* MinIO: exactly C hits per epoch after the first (the cached ids are all read
  once per epoch), hit ratio c.
* Belady: every reuse of an id spans the boundary between two epochs, so at
  most C ids can hit in the next epoch -- MinIO is optimal here and Belady must
  equal it exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from hotset.policies import Budget, Outcome, make_policy

N, EPOCHS = 10_000, 10


@pytest.fixture(scope="module")
def trace() -> np.ndarray:
    rng = np.random.default_rng(11)
    return np.concatenate([rng.permutation(N) for _ in range(EPOCHS)])


def _hits(name: str, trace: np.ndarray, capacity: int) -> np.ndarray:
    policy = make_policy(name, Budget(capacity_items=capacity), seed=1)
    if policy.capabilities.needs_future:
        policy.set_future(trace)
    return policy.replay(trace) == Outcome.HIT


@pytest.mark.parametrize("c", [0.1, 0.2, 0.4])
def test_lru_hits_about_c_squared_over_two(trace: np.ndarray, c: float) -> None:
    capacity = int(c * N)
    hit = _hits("lru", trace, capacity)
    assert abs(hit.mean() - c * c / 2) < 0.01  # over the whole run, cold epoch included
    steady = hit[N:].mean()  # epochs after the first
    exact = sum((capacity - i) / (N - i) for i in range(capacity)) / N
    assert abs(steady - exact) < 0.004
    assert not hit[:N].any()  # the first epoch reads every id once: no hit is possible


@pytest.mark.parametrize("c", [0.1, 0.2, 0.4])
def test_minio_hits_the_cache_fraction_after_the_first_epoch(trace: np.ndarray, c: float) -> None:
    capacity = int(c * N)
    hit = _hits("minio", trace, capacity)
    per_epoch = hit.reshape(EPOCHS, N).sum(axis=1)
    assert per_epoch[0] == 0
    assert per_epoch[1:].tolist() == [capacity] * (EPOCHS - 1)
    assert abs(hit[N:].mean() - c) < 0.01


@pytest.mark.parametrize("c", [0.1, 0.4])
def test_belady_equals_minio_on_permutations(trace: np.ndarray, c: float) -> None:
    capacity = int(c * N)
    belady = int(_hits("belady", trace, capacity).sum())
    assert belady == capacity * (EPOCHS - 1)
    for online in ("fifo", "lru", "lfu"):
        assert int(_hits(online, trace, capacity).sum()) < belady
