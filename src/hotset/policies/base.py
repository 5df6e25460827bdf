"""The policy contract, re-exported from the engine that drives it.

:class:`Policy`, :class:`Budget`, :class:`Decision`, :class:`Outcome`,
:class:`EvictionGroups`, ``N_OUTCOMES`` and ``IntArray`` are defined under
:mod:`hotset.engine` (the engine owns the contract it drives and never imports
the policies); this module keeps the old import path working.
"""

from __future__ import annotations

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.outcome import N_OUTCOMES, Decision, Outcome
from hotset.engine.policy import Policy
from hotset.engine.roles import EvictionGroups

__all__ = ["N_OUTCOMES", "Budget", "Decision", "EvictionGroups", "IntArray", "Outcome", "Policy"]
