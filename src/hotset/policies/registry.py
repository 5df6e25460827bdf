"""Policy names -> classes, imported lazily so a name costs nothing until used."""

from __future__ import annotations

import importlib
from typing import Any

from hotset.engine.budget import Budget
from hotset.engine.policy import Policy
from hotset.errors import HotsetError

# name -> "module:Class"
_POLICIES: dict[str, str] = {
    "nocache": "hotset.policies.nocache:NoCache",
    "fifo": "hotset.policies.fifo:FIFO",
    "lru": "hotset.policies.lru:LRU",
    "lfu": "hotset.policies.lfu:LFU",
    "minio": "hotset.policies.minio:MinIO",
    "belady": "hotset.policies.belady:Belady",
    "oracle": "hotset.policies.oracle:Oracle",
    # SHADE (FAST'23): APP and the cache policies of its §6.2 ablations
    "app": "hotset.policies.app:APP",
    "sh_pqlfu": "hotset.policies.shade_variants:PriorityLFU",
    "sh_pq": "hotset.policies.shade_variants:Priority",
    "sh_rand": "hotset.policies.shade_variants:RandomEvict",
    "emul_coor": "hotset.policies.shade_variants:FillKeep",
    "emul_quiv": "hotset.policies.shade_variants:SubstituteFromCache",
}


def register_policy(name: str, target: str) -> None:
    """Register ``name`` as ``"module:Class"`` (later systems add theirs).

    Idempotent for the same target; a name already registered to another class is
    refused, as the systems registry refuses a system defined twice: silently
    replacing ``lru`` would change every system built on it.
    """
    known = _POLICIES.get(name)
    if known is not None and known != target:
        raise HotsetError(f"policy {name!r} is already registered as {known}; not as {target}")
    _POLICIES[name] = target


def policy_names() -> list[str]:
    return sorted(_POLICIES)


def policy_class(name: str) -> type[Policy]:
    target = _POLICIES.get(name)
    if target is None:
        raise HotsetError(f"unknown policy {name!r}; choose from {', '.join(policy_names())}")
    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    assert isinstance(cls, type) and issubclass(cls, Policy)
    return cls


def make_policy(name: str, budget: Budget, **options: Any) -> Policy:
    """Build the policy called ``name`` with ``budget`` and keyword options."""
    return policy_class(name)(budget, **options)
