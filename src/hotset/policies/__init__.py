"""Cache policies: pure, deterministic decisions (see :mod:`hotset.policies.base`)."""

from hotset.policies.base import Budget, Decision, Outcome, Policy
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
