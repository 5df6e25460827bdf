"""Policy names -> classes, imported lazily so a name costs nothing until used.

One :class:`~hotset.registry.Registry` (the type stores and systems register in too):
each built-in policy is registered as ``"module:Class"`` text, imported when its name
is first built.
"""

from __future__ import annotations

from typing import Any

from hotset.engine.budget import Budget
from hotset.engine.policy import Policy
from hotset.registry import Registry

#: the built-in policies, name -> "module:Class"
_BUILT_IN: dict[str, str] = {
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

#: name -> policy class (the built-ins given as "module:Class", imported at first use)
POLICIES: Registry[type[Policy]] = Registry(
    "policy", check=lambda cls: isinstance(cls, type) and issubclass(cls, Policy)
)
for _name, _target in _BUILT_IN.items():
    POLICIES.register(_name, _target)


def register_policy(name: str, target: str | type[Policy], *, replace: bool = False) -> None:
    """Register ``name`` as ``"module:Class"`` (or the class itself).

    Idempotent for the same target; a name already registered to another class needs
    ``replace=True``, as a store scheme does: silently replacing ``lru`` would change
    every system built on it.
    """
    POLICIES.register(name, target, replace=replace)


def policy_names() -> list[str]:
    return sorted(POLICIES.names())


def policy_class(name: str) -> type[Policy]:
    return POLICIES.get(name)


def make_policy(name: str, budget: Budget, **options: Any) -> Policy:
    """Build the policy called ``name`` with ``budget`` and keyword options."""
    return policy_class(name)(budget, **options)
