"""The iCACHE/ImPACT papers' comparators: ``ilfu``, ``base`` (CIS + LRU) and ``nopfs``.

The engine's contract tests (``tests/engine/test_engine_contract.py``) hold them to
the budget after every access, exact resumption from JSON state and the real
loader making the engine's decisions, as every registered system; these tests
check what makes each the papers' comparator.
"""

from __future__ import annotations

import numpy as np
import pytest

from budget_support import check_budget
from coverage_support import drive, skewed_losses
from hotset.errors import HotsetError
from hotset.policies.base import Budget, Outcome
from hotset.samplers.base import EpochContext
from hotset.samplers.iis import IISSampler
from hotset.systems.base import System
from hotset.systems.registry import build_system

N = 400  # IIS's window is 64 here: its first window of ids is always kept


def _budget(frac: float, n: int = N) -> Budget:
    sizes = np.full(n, 100, dtype=np.int64)
    return Budget(capacity_bytes=int(frac * sizes.sum()), sizes=sizes)


def _epoch(system: System, epoch: int, *, rank: int = 0, world_size: int = 1) -> np.ndarray:
    """One epoch as a driver runs it: outcomes per access, skewed losses fed back."""
    order = system.begin_epoch(epoch, rank=rank, world_size=world_size)
    outcomes = []
    for start in range(0, len(order), 16):
        batch = order[start : start + 16]
        decisions = []
        for sid in batch.tolist():
            decisions.append(system.access(int(sid)))
            check_budget(system.policy)  # never over budget, after every access
        outcomes += [int(d.outcome) for d in decisions]
        served = np.array([d.served for d in decisions], dtype=np.int64)
        system.feedback(served, skewed_losses(served, N), epoch=epoch)
    system.end_epoch(train_loss=1.0, val_accuracy=None)
    return np.asarray(outcomes, dtype=np.int8)


# -- ilfu ------------------------------------------------------------------------------


def test_ilfu_reads_what_iis_keeps_and_caches_by_frequency() -> None:
    """Its orders are icache's IIS orders (same seed, same losses); its cache is LFU."""
    ilfu_orders, ilfu_trained = drive("ilfu", n=N, cache_frac=0.2, epochs=8, seed=3, window=64)
    iis_orders, _ = drive("icache_iis_lru", n=N, cache_frac=0.2, epochs=8, seed=3, window=64)
    for a, b in zip(ilfu_orders, iis_orders, strict=True):
        assert np.array_equal(a, b)
    assert len(ilfu_orders[5]) < N  # a selection epoch reads fewer than all
    for order, trained in zip(ilfu_orders, ilfu_trained, strict=True):
        assert len(np.unique(order)) == len(order)  # each kept id asked for once
        assert np.array_equal(np.sort(order), trained)  # and trained (no substitution)
    system = build_system("ilfu[window=64]", n=N, budget=_budget(0.2), seed=3)
    assert system.policy.name == "lfu" and not system.weighted
    hits = [int((_epoch(system, e) == Outcome.HIT).sum()) for e in range(8)]
    assert hits[0] == 0 and sum(hits[1:]) > 0


def test_ilfu_takes_the_iis_options_and_refuses_others() -> None:
    system = build_system("ilfu[beta=0.5,warm_up=2]", n=N, budget=_budget(0.2), seed=0)
    assert isinstance(system.sampler, IISSampler)
    assert (system.sampler.beta, system.sampler.warm_up) == (0.5, 2)
    with pytest.raises(HotsetError, match="system 'ilfu' has no option 'h_share'"):
        build_system("ilfu[h_share=0.5]", n=N, budget=_budget(0.2), seed=0)


# -- base ------------------------------------------------------------------------------


def test_base_reads_every_sample_every_epoch_with_lrus_outcomes() -> None:
    """Base's reads are exactly ``lru``'s: importance sampling saves no I/O."""
    base = build_system("base[window=64]", n=N, budget=_budget(0.2), seed=4)
    lru = build_system("lru", n=N, budget=_budget(0.2), seed=4)
    for epoch in range(7):
        got, want = _epoch(base, epoch), _epoch(lru, epoch)
        assert np.array_equal(got, want)
        assert base.policy.resident() == lru.policy.resident()
        order = base.sampler.order(EpochContext(epoch=epoch))
        assert sorted(order.tolist()) == list(range(N))  # every sample read, once


def test_base_trains_exactly_what_iis_would_keep() -> None:
    """In a selection epoch the ids with weight > 0 are IIS's kept ids; the rest weigh 0
    and a batch's weights average to 1 over its selected ids."""
    system = build_system("base[window=64]", n=N, budget=_budget(0.2), seed=5)
    iis = IISSampler(N, seed=5, window=64)
    for epoch in range(5):
        _epoch(system, epoch)
    snapshot = system.table.snapshot()
    ctx = EpochContext(epoch=5, scores=snapshot.scores, losses=snapshot.losses)
    order = system.begin_epoch(5)
    kept = set(iis.global_order(ctx).tolist())
    assert 0 < len(kept) < N
    selected = {s for s in order.tolist() if system.weights(np.array([s]))[0] > 0}
    assert selected == kept
    batch = order[:16]
    weights = system.weights(batch)
    chosen = np.array([s in kept for s in batch.tolist()])
    assert (weights[~chosen] == 0).all()
    if chosen.any():
        assert weights[chosen] == pytest.approx(len(batch) / chosen.sum())
    full = build_system("base", n=N, budget=_budget(0.2), seed=5)
    assert np.array_equal(full.weights(full.begin_epoch(0)[:16]), np.ones(16))  # warm-up


# -- nopfs -----------------------------------------------------------------------------


def test_nopfs_one_rank_caches_the_first_read_ids_and_never_evicts() -> None:
    """One rank: counts tie, so the placement is the ids the seeded future reads first;
    from epoch 1 on every placed id hits once an epoch (hit ratio = cache fraction)."""
    frac = 0.2
    system = build_system("nopfs", n=N, budget=_budget(frac), seed=6)
    first = system.sampler.order(EpochContext(epoch=0))
    out0 = _epoch(system, 0)
    assert (out0 == Outcome.MISS).all()
    placed = system.policy.resident()
    assert placed == set(first[: int(frac * N)].tolist())
    for epoch in range(1, 13):  # past the horizon (10): the re-placement keeps the residents
        out = _epoch(system, epoch)
        assert int((out == Outcome.HIT).sum()) == int(frac * N)
        assert system.policy.resident() == placed


def test_nopfs_across_ranks_places_what_its_rank_reads_most() -> None:
    """Two ranks: each rank's shard changes every epoch, so counts differ; the placement is
    the most-read ids of this rank's future, and it hits more than MinIO's random subset."""
    n, frac, horizon = N, 0.1, 6
    nopfs = build_system(f"nopfs[horizon={horizon}]", n=n, budget=_budget(frac), seed=7)
    minio = build_system("minio", n=n, budget=_budget(frac), seed=7)
    futures = [nopfs.sampler.order(EpochContext(epoch=e, rank=1, world_size=2)) for e in range(6)]
    counts = np.bincount(np.concatenate(futures), minlength=n)
    hits = {"nopfs": 0, "minio": 0}
    for epoch in range(horizon):
        for name, system in (("nopfs", nopfs), ("minio", minio)):
            out = _epoch(system, epoch, rank=1, world_size=2)
            hits[name] += int((out == Outcome.HIT).sum())
        if epoch == 0:
            placed = np.array(sorted(nopfs.policy._placed))  # type: ignore[attr-defined]
            assert len(placed) == int(frac * n)
            assert counts[placed].min() >= np.sort(counts)[::-1][len(placed) - 1]
    assert hits["nopfs"] > hits["minio"], hits


def test_nopfs_refuses_an_order_that_is_not_the_seeded_future() -> None:
    system = build_system("nopfs", n=50, budget=_budget(0.2, 50), seed=0)
    with pytest.raises(HotsetError, match="not the seeded future"):
        system.policy.begin_epoch(0, np.arange(50, dtype=np.int64))


@pytest.mark.parametrize("horizon", [0, -1, 2.5, True])
def test_nopfs_horizon_is_a_positive_integer(horizon: object) -> None:
    with pytest.raises(HotsetError, match="horizon"):
        build_system("nopfs", n=50, budget=_budget(0.2, 50), seed=0, horizon=horizon)
