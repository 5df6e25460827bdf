"""The baselines every paper compares against: a random order plus a plain cache.

All of them read every sample once per epoch in a fresh seeded permutation
(PyTorch's ``shuffle=True``), keep no importance and weight no loss; they differ
only in the cache policy. ``belady`` is the offline bound: its policy needs the
whole future, which a driver can compute exactly because a random order never
depends on training feedback (see :func:`hotset.sim.live.run_live`, which calls
``policy.set_future`` with every epoch's order concatenated before epoch 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hotset.engine.budget import Budget
from hotset.errors import HotsetError
from hotset.policies.registry import make_policy
from hotset.systems.base import System, SystemSpec
from hotset.systems.options import SystemOption


def _builder(system_name: str, policy_name: str) -> Callable[..., System]:
    """A ``build`` for a random-order system whose cache is ``policy_name``."""

    def build(
        *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
    ) -> System:
        if options:
            raise HotsetError(
                f"system {system_name!r} takes no options, got {', '.join(sorted(options))}"
            )
        # Imported here: these modules land independently and cost an import each.
        from hotset.importance.table import ImportanceTable
        from hotset.samplers.random import RandomSampler

        return System(
            name=system_name,
            sampler=RandomSampler(n, seed=seed),
            policy=make_policy(policy_name, budget, seed=seed),
            table=ImportanceTable(n),
            scorer=None,
            weighted=False,
            options={"batch_size": batch_size, "policy": policy_name},
        )

    build.__name__ = f"build_{system_name}"
    build.__doc__ = f"Random order (seeded per epoch) with the {policy_name!r} cache policy."
    return build


def _spec(name: str, policy: str, summary: str, source: str) -> SystemSpec:
    return SystemSpec(name=name, summary=summary, source=source, build=_builder(name, policy))


SPECS: list[SystemSpec] = [
    _spec(
        "pytorch",
        "nocache",
        "PyTorch DataLoader: random order, no cache, every access reads storage",
        "SHADE FAST'23 §6.1 baseline; Brand §5 'PyTorch'",
    ),
    _spec(
        "lru",
        "lru",
        "random order + LRU cache (hits about c²/2 at cache fraction c)",
        "SHADE FAST'23 §6.2 baseline LRU; iCACHE §V-A 'Default'",
    ),
    _spec(
        "fifo",
        "fifo",
        "random order + FIFO cache",
        "classic replacement baseline (no paper section)",
    ),
    _spec(
        "lfu",
        "lfu",
        "random order + LFU cache",
        "classic replacement baseline; cf. SHADE FAST'23 §6.2 sh_lfu",
    ),
    _spec(
        "minio",
        "minio",
        "CoorDL MinIO: cache what fits in epoch 1, never evict (hit ratio ≈ cache fraction)",
        "CoorDL, Mohan et al. VLDB'21 §4 (MinIO); iCACHE §V-A 'CoorDL'",
    ),
    _spec(
        "belady",
        "belady",
        "random order + Belady's offline MIN (the driver hands it the whole future)",
        "Belady 1966; SHADE FAST'23 §4.1 and §6.2 offline bound",
    ),
    _spec(
        "oracle",
        "oracle",
        "every access is a hit: the no-I/O bound",
        "iCACHE §V-A 'Oracle'; Brand §5 'No-I/O'",
    ),
]

#: none of them takes an option (``hotset.systems.options``)
OPTIONS: dict[str, tuple[SystemOption, ...]] = {spec.name: () for spec in SPECS}
