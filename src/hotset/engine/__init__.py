"""The one engine (no torch import): a System's decisions as per-batch plans.

The trace simulator, the live-training simulator and the real loader all drive
:class:`~hotset.engine.planner.Planner`; see that module for feedback lag,
read units, prefetch staging and cache writes.

The engine owns the contract it drives -- :class:`Policy`, :class:`Budget`,
:class:`Decision`, :class:`Outcome`, :class:`Capabilities` and the
:class:`System` protocol -- and imports neither :mod:`hotset.policies` nor
:mod:`hotset.systems` (``tests/test_structure.py`` checks it), so the layers
read bottom-up: engine, then the policies and systems built on it.
"""

from __future__ import annotations

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.counters import COUNTER_KEYS, COVERAGE_KEYS, Coverage, EpochCounts
from hotset.engine.feedback import Feedback
from hotset.engine.outcome import N_OUTCOMES, Decision, Outcome
from hotset.engine.plan import BatchPlan, EpochLog
from hotset.engine.planner import Planner
from hotset.engine.policy import Policy
from hotset.engine.roles import EvictionGroups, GroupsEvictions, JoinsCycle, PlacesByBenefit
from hotset.engine.system import System
from hotset.engine.units import UnitLayout

__all__ = [
    "COUNTER_KEYS",
    "COVERAGE_KEYS",
    "N_OUTCOMES",
    "BatchPlan",
    "Budget",
    "Capabilities",
    "Coverage",
    "Decision",
    "EpochCounts",
    "EpochLog",
    "EvictionGroups",
    "Feedback",
    "GroupsEvictions",
    "IntArray",
    "JoinsCycle",
    "Outcome",
    "PlacesByBenefit",
    "Planner",
    "Policy",
    "System",
    "UnitLayout",
]
