"""The budget invariants every policy keeps, checked by the engine and policy tests."""

from __future__ import annotations

from hotset.policies.base import Policy


def check_budget(policy: Policy) -> None:
    """The budget invariants: total, per region, and prefetch staging."""
    caps = policy.capabilities
    budget = policy.budget
    if caps.uses_budget:
        assert budget.fits(policy.used_bytes, policy.used_items), (
            f"{policy.name}: {policy.used_bytes} bytes / {policy.used_items} items over {budget}"
        )
    regions = policy.regions()
    assert regions, f"{policy.name}: no region"
    if caps.uses_budget and budget.capacity_bytes is not None:
        assert sum(cap for _, cap in regions.values()) <= budget.capacity_bytes
        for region, (used, cap) in regions.items():
            assert 0 <= used <= cap, f"{policy.name}: region {region} holds {used} of {cap}"
    assert 0 <= policy.staged_bytes <= budget.staging_bytes
