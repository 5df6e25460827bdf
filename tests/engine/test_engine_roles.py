"""The roles a policy takes on (hotset.engine.roles) agree with what it says it does.

Why: the base Policy no longer answers Quiver's questions (the shared chunk cycle,
the probe board, eviction in concert) with no-op defaults; a driver asks for the
role by type. So a policy that sets ``joins_cycle`` or ``evicts_in_concert``
without the role's methods would be silently left out of the coordination it
asked for -- these tests fail on it, for every registered policy.
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_support import build

from hotset.engine.policy import Policy
from hotset.engine.roles import (
    Backgrounds,
    Evaluates,
    GroupsEvictions,
    JoinsCycle,
    NeedsFuture,
    ObservesScores,
    PlacesByBenefit,
    PlansWorld,
    Prefetches,
    RoutesAroundLoss,
    SplitsByRank,
    TakesImportance,
)
from hotset.systems.registry import system_names

ROLES = (
    GroupsEvictions,
    JoinsCycle,
    PlacesByBenefit,
    NeedsFuture,
    PlansWorld,
    Prefetches,
    Backgrounds,
    Evaluates,
    TakesImportance,
    ObservesScores,
    RoutesAroundLoss,
    SplitsByRank,
)
#: the hooks that were no-op defaults of every policy and are now roles
ROLE_METHODS = {
    "eviction_groups",
    "awaits_join",
    "join_cycle",
    "cycle_step",
    "wants_board",
    "probe_window",
    "probe_record",
    "apply_board",
    "set_future",
    "begin_world",
    "prefetch",
    "background",
    "to_evaluate",
    "update_importance",
    "observe",
    "cache_lost",
    "bind_rank",
}
#: capability flag -> the role it needs
FLAG_ROLES = {
    "joins_cycle": JoinsCycle,
    "evicts_in_concert": GroupsEvictions,
    "needs_future": NeedsFuture,
    "plans_world": PlansWorld,
    "prefetches": Prefetches,
    "packs": Backgrounds,
    "loads": Backgrounds,
    "evaluates": Evaluates,
}


def _built(name: str) -> Policy:
    """The policy of system ``name`` (every registered one, and the test-only ones)."""
    sizes = np.random.default_rng(0).integers(10, 60, 64).astype(np.int64)
    return build(name, n=64, sizes=sizes, frac=0.3, seed=0, batch_size=8).policy


@pytest.mark.parametrize("name", system_names())
def test_a_flag_is_set_only_on_a_policy_with_the_roles_methods(name: str) -> None:
    policy = _built(name)
    for flag, role in FLAG_ROLES.items():
        if getattr(policy.capabilities, flag):
            assert isinstance(policy, role), (name, flag, role.__name__)


@pytest.mark.parametrize("name", system_names())
def test_a_role_is_all_of_its_methods_or_none(name: str) -> None:
    """Half a role would pass neither isinstance check nor the driver: refused here."""
    cls = type(_built(name))
    for role in ROLES:
        wanted = {m for m in dir(role) if not m.startswith("_")}
        has = {m for m in wanted if callable(getattr(cls, m, None))}
        assert has in (set(), wanted), (name, role.__name__, sorted(has))


def test_the_base_policy_carries_no_role() -> None:
    public = {n for n in dir(Policy) if not n.startswith("_") and callable(getattr(Policy, n))}
    assert not public & ROLE_METHODS
    assert len(public) <= 12  # issue #42's bound; 28 with the roles' no-op defaults
    lru = _built("lru")
    assert not any(isinstance(lru, role) for role in ROLES)


def test_quiver_takes_on_its_three_coordination_roles() -> None:
    quiver = _built("quiver")
    assert all(isinstance(quiver, role) for role in (GroupsEvictions, JoinsCycle, PlacesByBenefit))


def test_a_flag_without_its_role_is_named_by_the_driver() -> None:
    """A policy that says it prefetches but cannot: the planner names the role it lacks,
    not an AttributeError from deep inside a batch."""
    import dataclasses

    from hotset.engine.planner import Planner
    from hotset.errors import HotsetError

    sizes = np.random.default_rng(0).integers(10, 60, 64).astype(np.int64)
    system = build("lru", n=64, sizes=sizes, frac=0.3, seed=0, batch_size=8)
    policy = system.policy
    caps = dataclasses.replace(policy.capabilities, evaluates=True)
    policy.capabilities = caps  # type: ignore[misc]  # this instance only: the class keeps its flags
    planner = Planner(system, n=64, batch_size=8, lag=0)
    with pytest.raises(
        HotsetError,
        match=r"'lru' declares capabilities.evaluates but does not implement hotset.engine.roles.Evaluates",
    ):
        planner.evaluate(0, lambda ids: np.zeros(len(ids)))
