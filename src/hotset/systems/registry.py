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
import re
from typing import Any

from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.systems.base import System, SystemSpec

#: modules searched for ``SPECS``, in listing order
_MODULES: list[str] = [
    "hotset.systems.baselines",
    "hotset.systems.shade",
    "hotset.systems.brand",
    "hotset.systems.icache",
    "hotset.systems.impact",
    "hotset.systems.quiver",
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


_SPEC = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:\[(.*)\])?\s*$")


def _option_value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def parse_system(text: str) -> tuple[str, dict[str, Any]]:
    """``"shade"`` or ``"shade[coverage_floor=0.2,unbiased=true]"`` -> (name, options).

    Lets a benchmark or command line compare one system with a few option
    settings side by side (a row per spec). Values are ``true``/``false``/``none``,
    integers, floats, else strings; the system validates them when built.
    """
    match = _SPEC.match(text) if isinstance(text, str) else None
    if match is None:
        raise HotsetError(f"system spec {text!r:.80} is not NAME or NAME[option=value,...]")
    name, body = match.group(1), match.group(2)
    get_spec(name)
    options: dict[str, Any] = {}
    for part in [] if not body else body.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise HotsetError(f"system spec {text!r}: {part!r} is not option=value")
        options[key.strip()] = _option_value(value)
    return name, options


def split_systems(text: str) -> list[str]:
    """A comma-separated list of system specs; commas inside ``[...]`` stay with their spec."""
    out, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += ch
    out.append(current.strip())
    return [s for s in out if s]


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
                "pack it first with `hotset data pack DIR --chunk-size 64 --shuffle-seed 0` "
                "(a seeded shuffle cut into chunks, as Brand §3.2 asks)"
            )
        if len(layout.chunk_of) != n:
            raise HotsetError(
                f"system {name!r}: the chunk layout covers {len(layout.chunk_of)} ids, "
                f"the dataset {n}; re-pack it"
            )
    system.policy.attach_layout(layout)
    return system
