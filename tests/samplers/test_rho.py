"""RHO-loss selection (ImPACT's reference [22]): the top share by training loss minus
irreducible loss, as ``impact[sampler=rho]`` and ``scout[sampler=rho]``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_support import run_cli
from hotset.data.synth import SynthConfig, make_synth
from hotset.engine.budget import Budget
from hotset.errors import HotsetError
from hotset.importance.rank_variance import RankTracker
from hotset.samplers import EpochContext
from hotset.samplers.impact import ImpactSampler
from hotset.samplers.rho import IrreducibleLosses, rho_keep_mask
from hotset.sim.live import LiveOptions, run_live
from hotset.systems.registry import build_system
from layout_support import make_layout

NAN = float("nan")


def test_the_selection_of_a_small_table_is_the_hand_computed_one() -> None:
    # position:        0    1    2    3    4    5
    losses = np.array([2.0, 0.5, NAN, 3.0, 1.0, 1.2])
    irreducible = np.array([1.8, 0.1, 0.0, 0.5, 0.2, 0.4])
    # reducible:       0.2  0.4  -    2.5  0.8  0.8 ; m = 5 known, ceil(0.4 * 5) = 2 kept:
    # 2.5 (position 3), then the tie at 0.8 goes to the earlier position (4), not 5;
    # position 2 has no training loss and is always kept
    keep = rho_keep_mask(losses, irreducible, 0.4)
    assert keep.tolist() == [False, False, True, True, True, False]
    # the plain training loss would have kept positions 3 and 0 instead: the rule differs
    assert rho_keep_mask(losses, np.zeros(6), 0.4).tolist() == [
        True, False, True, True, False, False,
    ]  # fmt: skip
    assert rho_keep_mask(losses, irreducible, 1.0).all()


def _done_tracker(n: int) -> RankTracker:
    tracker = RankTracker(np.ones(n, dtype=np.int64), s_bytes=n // 10, max_epochs=2)
    for epoch in range(3):
        tracker.observe(epoch, np.arange(n, dtype=np.float64) + epoch, full_epoch=epoch + 1)
    assert tracker.done
    return tracker


def test_impact_keeps_the_top_tenth_by_reducible_loss_in_its_seeded_order() -> None:
    n = 40
    losses = np.linspace(0.1, 4.0, n)
    irreducible = np.where(np.arange(n) % 2 == 0, 3.5, 0.0)  # even ids: "noisy labels"
    holder = IrreducibleLosses(n)
    holder.set(np.arange(n), irreducible)
    sampler = ImpactSampler(n, tracker=_done_tracker(n), seed=4, sampler="rho", rho=holder)
    order = sampler.order(EpochContext(epoch=6, losses=losses))
    # the 4 (10% of 40) largest reducible losses: the 4 largest odd ids, 39 37 35 33
    assert sorted(order.tolist()) == [33, 35, 37, 39]
    perm = np.random.default_rng([4, 6]).permutation(n)
    assert order.tolist() == [int(i) for i in perm if i in (33, 35, 37, 39)]  # seeded order
    again = ImpactSampler(n, tracker=_done_tracker(n), seed=4, sampler="rho", rho=holder)
    assert np.array_equal(order, again.order(EpochContext(epoch=6, losses=losses)))


def test_a_selection_without_irreducible_losses_is_refused_naming_how_to_give_them() -> None:
    n = 40
    sampler = ImpactSampler(n, tracker=_done_tracker(n), seed=0, sampler="rho")
    with pytest.raises(HotsetError, match=r"40 of 40 samples have no irreducible.*set_irreducible"):
        sampler.order(EpochContext(epoch=6, losses=np.ones(n)))
    with pytest.raises(HotsetError, match=r"id 3 has irreducible loss inf"):
        IrreducibleLosses(n).set([1, 3], [0.5, float("inf")])
    with pytest.raises(HotsetError, match=r"ids must be integers in 0\.\.39"):
        IrreducibleLosses(n).set([40], [0.5])


def _budget(n: int) -> Budget:
    return Budget(capacity_bytes=2 * n, sizes=np.full(n, 10, dtype=np.int64))


def test_the_option_reads_a_npy_array_and_refuses_pickles_and_wrong_shapes(tmp_path: Path) -> None:
    n = 50
    good = tmp_path / "il.npy"
    np.save(good, np.linspace(0, 1, n))
    system = build_system(
        "impact", n=n, budget=_budget(n), seed=0, sampler="rho", irreducible=str(good)
    )
    assert not system.needs_irreducible
    assert system.sampler.rho.values[-1] == 1.0  # type: ignore[attr-defined]
    pickled = tmp_path / "obj.npy"
    np.save(pickled, np.array([{"x": 1}] * n, dtype=object), allow_pickle=True)
    short = tmp_path / "short.npy"
    np.save(short, np.zeros(n - 1))
    for bad, why in ((pickled, "cannot read"), (short, r"need 50 numbers.*\(49,\)")):
        with pytest.raises(HotsetError, match=why):
            build_system("impact", n=n, budget=_budget(n), seed=0, sampler="rho", irreducible=bad)
    with pytest.raises(HotsetError, match=r"irreducible=.*only by sampler=rho"):
        build_system("impact", n=n, budget=_budget(n), seed=0, irreducible=str(good))
    with pytest.raises(HotsetError, match=r"rho_share must be a share in \(0, 1\], got 0"):
        build_system("impact", n=n, budget=_budget(n), seed=0, sampler="rho", rho_share=0)


def test_set_irreducible_fills_the_sampler_and_is_refused_without_rho() -> None:
    n = 50
    system = build_system("impact_history", n=n, budget=_budget(n), seed=0, sampler="rho")
    assert system.needs_irreducible
    system.set_irreducible(np.arange(n), np.full(n, 0.3))
    assert not system.needs_irreducible
    plain = build_system("impact", n=n, budget=_budget(n), seed=0)
    with pytest.raises(HotsetError, match=r"does not select by reducible loss"):
        plain.set_irreducible([0], [0.1])


def test_scout_selects_by_rho_on_its_selection_epochs_only() -> None:
    n = 64
    system = build_system(
        "scout",
        n=n,
        budget=_budget(n),
        seed=2,
        sampler="rho",
        rho_share=0.25,
        layout=make_layout(np.full(n, 10, dtype=np.int64), 8),
    )
    losses = np.linspace(0.1, 2.0, n)
    system.set_irreducible(np.arange(n), np.zeros(n))
    sampler = system.sampler
    full = sampler.order(EpochContext(epoch=3, losses=losses))  # a warm-up epoch: every id
    assert sorted(full.tolist()) == list(range(n))
    chosen = sampler.order(EpochContext(epoch=5, losses=losses))  # IIS's first selection
    assert sorted(chosen.tolist()) == list(range(48, 64))  # the top quarter by loss


def test_hotset_systems_lists_the_rho_options() -> None:
    for name in ("impact", "scout"):
        code, out = run_cli("systems", "--options", name, "--json")
        assert code == 0, out
        rows = {row["name"]: row for row in json.loads(out)}
        assert "rho" in rows["sampler"]["type"]
        assert rows["rho_share"]["default"] == 0.1
        assert rows["irreducible"]["default"] is None


def test_the_simulator_trains_held_out_models_and_charges_them(tmp_path: Path) -> None:
    out = tmp_path / "syn"
    make_synth(out, SynthConfig(n=300, image_size=8, classes=3, channels=1, seed=0), workers=1)
    kw = {"dataset": str(out), "cache_frac": 0.3, "epochs": 4, "seed": 1}
    result = run_live(LiveOptions(system="impact_history[sampler=rho,max_warm_up=2]", **kw))
    setup = result["setup"]
    n_train = result["n_train"]
    assert setup["irreducible_reads"] == n_train and setup["modeled_seconds"] > 0
    last = result["epochs"][-1]
    assert last["requests"] < n_train / 2  # selection: about a tenth, plus the coverage guard
    assert run_live(LiveOptions(system="impact_history", **kw))["setup"] is None
