"""Cache policies: pure, deterministic decisions (the contract: :mod:`hotset.engine.policy`)."""

from hotset.engine.budget import Budget
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.policy import Policy
from hotset.policies.registry import make_policy, policy_class, policy_names, register_policy

__all__ = [
    "Budget",
    "Decision",
    "Outcome",
    "Policy",
    "make_policy",
    "policy_class",
    "policy_names",
    "register_policy",
]
