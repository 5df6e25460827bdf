"""System names -> :class:`SystemSpec`, found in a short list of modules.

Each system module exposes ``SPECS: list[SystemSpec]``. The registry imports a
module only when a name is asked for (or all names are listed), so importing
hotset costs nothing until a system is built. A new paper is one module added
to :data:`_MODULES` (or registered with :func:`register_module`).

Only modules that exist are listed: a missing or broken module raises rather
than silently shrinking the list of systems a user can choose from.
"""

from __future__ import annotations

import importlib
from typing import Any

from hotset.engine.capabilities import Capabilities
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.policies.base import Budget
from hotset.systems.base import System, SystemSpec

#: modules searched for ``SPECS``, in listing order
_MODULES: list[str] = [
    "hotset.systems.baselines",
    "hotset.systems.shade",
]


def register_module(module: str) -> None:
    """Add a module holding ``SPECS`` (idempotent)."""
    if module not in _MODULES:
        _MODULES.append(module)


def _all_specs() -> dict[str, SystemSpec]:
    specs: dict[str, SystemSpec] = {}
    for module_name in _MODULES:
        module = importlib.import_module(module_name)
        for spec in getattr(module, "SPECS", []):
            if not isinstance(spec, SystemSpec):
                raise TypeError(f"{module_name}.SPECS holds {spec!r}, not a SystemSpec")
            if spec.name in specs:
                raise HotsetError(
                    f"system {spec.name!r} is defined twice ({module_name} and an earlier module)"
                )
            specs[spec.name] = spec
    return specs


def system_names() -> list[str]:
    """Every known system name, in module order (baselines first)."""
    return list(_all_specs())


def all_specs() -> list[SystemSpec]:
    """Every spec, in the order of :func:`system_names`."""
    return list(_all_specs().values())


def get_spec(name: str) -> SystemSpec:
    specs = _all_specs()
    spec = specs.get(name)
    if spec is None:
        raise HotsetError(f"unknown system {name!r}; choose from {', '.join(specs)}")
    return spec


def capabilities_of(name: str) -> Capabilities:
    """What system ``name`` needs from a driver, read from a tiny probe build (no I/O)."""
    probe = get_spec(name).build(n=4, budget=Budget(capacity_items=1), seed=0, batch_size=1)
    return probe.capabilities


def build_system(
    name: str,
    *,
    n: int,
    budget: Budget,
    seed: int,
    batch_size: int = 128,
    layout: UnitLayout | None = None,
    **options: Any,
) -> System:
    """Build the system called ``name`` over ``n`` sample ids (0..n-1).

    ``layout`` is the dataset's chunk layout, if it has one; a system that reads
    whole units (``capabilities.reads_units``) cannot run without it.
    """
    if n < 1:
        raise HotsetError(f"system {name!r}: the dataset must hold at least one sample, got n={n}")
    if batch_size < 1:
        raise HotsetError(f"system {name!r}: batch_size must be >= 1, got {batch_size}")
    system = get_spec(name).build(n=n, budget=budget, seed=seed, batch_size=batch_size, **options)
    if system.capabilities.reads_units:
        if layout is None:
            raise HotsetError(
                f"system {name!r} reads whole chunks: the dataset has no chunk layout; "
                "pack it first with `hotset data pack DIR --chunk-size 64`"
            )
        if len(layout.chunk_of) != n:
            raise HotsetError(
                f"system {name!r}: the chunk layout covers {len(layout.chunk_of)} ids, "
                f"the dataset {n}; re-pack it"
            )
    system.policy.attach_layout(layout)
    return system
