"""The one engine (no torch import): a System's decisions as per-batch plans.

The trace simulator, the live-training simulator and the real loader all drive
:class:`~hotset.engine.planner.Planner`; see that module for feedback lag,
read units, prefetch staging and cache writes. Names are imported lazily
because the policy core imports :mod:`hotset.engine.capabilities` while the
planner imports the policy core.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Capabilities": "hotset.engine.capabilities",
    "BatchPlan": "hotset.engine.plan",
    "EpochLog": "hotset.engine.plan",
    "Planner": "hotset.engine.planner",
    "Feedback": "hotset.engine.feedback",
    "EpochCounts": "hotset.engine.counters",
    "Coverage": "hotset.engine.counters",
    "COUNTER_KEYS": "hotset.engine.counters",
    "COVERAGE_KEYS": "hotset.engine.counters",
    "UnitLayout": "hotset.engine.units",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hotset.engine' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
