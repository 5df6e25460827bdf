"""System names -> :class:`SystemSpec`, found in a short list of modules.

Each system module exposes ``SPECS: list[SystemSpec]``. The registry imports a
module only when a name is asked for (or all names are listed), so importing
hotset costs nothing until a system is built. A new paper is one module added
to :data:`_BUILT_IN` (or registered with :func:`register_module`); the modules are one
:class:`~hotset.registry.Registry` (:data:`MODULES`), the type stores and policies use.

Only modules that exist are listed: a missing or broken module raises rather
than silently shrinking the list of systems a user can choose from.

A module may also hold ``OPTIONS`` (:mod:`hotset.systems.options`): then a spec
``NAME[option=value,...]`` is checked here, by :func:`parse_system` -- the one
parser of the grammar, which every entry point that takes a system goes through.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError, did_you_mean
from hotset.registry import Registry
from hotset.systems.base import System, SystemSpec
from hotset.systems.options import SystemOption, format_value, parse_loose

#: the built-in modules searched for ``SPECS``, in listing order
_BUILT_IN: list[str] = [
    "hotset.systems.baselines",
    "hotset.systems.ilfu",
    "hotset.systems.cis",
    "hotset.systems.nopfs",
    "hotset.systems.shade",
    "hotset.systems.brand",
    "hotset.systems.icache",
    "hotset.systems.impact",
    "hotset.systems.quiver",
    "hotset.systems.scout",
]


#: module name -> the module (imported when a system is first asked for), in listing order
MODULES: Registry[ModuleType] = Registry(
    "system module", check=lambda module: isinstance(module, ModuleType)
)
for _module in _BUILT_IN:
    MODULES.register(_module, _module)


def register_module(module: str) -> None:
    """Add a module holding ``SPECS`` (idempotent)."""
    MODULES.register(module, module)


def _load() -> tuple[dict[str, SystemSpec], dict[str, tuple[SystemOption, ...]]]:
    """Every spec by name, and the options of every system whose module declares them."""
    specs: dict[str, SystemSpec] = {}
    declared: dict[str, tuple[SystemOption, ...]] = {}
    for module_name in MODULES.names():
        module = MODULES.get(module_name)
        mine = set()
        for spec in getattr(module, "SPECS", []):
            if not isinstance(spec, SystemSpec):
                raise TypeError(f"{module_name}.SPECS holds {spec!r}, not a SystemSpec")
            if spec.name in specs:
                raise HotsetError(
                    f"system {spec.name!r} is defined twice ({module_name} and an earlier module)"
                )
            specs[spec.name] = spec
            mine.add(spec.name)
        for name, options in getattr(module, "OPTIONS", {}).items():
            if name not in mine:
                raise TypeError(f"{module_name}.OPTIONS names {name!r}, not one of its SPECS")
            declared[name] = tuple(options)
    return specs, declared


def _all_specs() -> dict[str, SystemSpec]:
    return _load()[0]


def system_names() -> list[str]:
    """Every known system name, in module order (baselines first)."""
    return list(_all_specs())


def all_specs() -> list[SystemSpec]:
    """Every spec, in the order of :func:`system_names`."""
    return list(_all_specs().values())


def get_spec(name: str) -> SystemSpec:
    """The spec of system ``name`` (a bare name: :func:`parse_system` reads a spec)."""
    specs = _all_specs()
    spec = specs.get(name)
    if spec is None:
        raise HotsetError(
            f"unknown system {name!r}{did_you_mean(name, specs)}; choose from {', '.join(specs)}"
        )
    return spec


def options_of(name: str) -> tuple[SystemOption, ...] | None:
    """System ``name``'s options (type, default, meaning); None if its module declares none
    (its ``build`` then checks what it is given)."""
    get_spec(name)  # unknown name -> the error listing the systems
    return _load()[1].get(name)


_SPEC = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:\[(.*)\])?\s*$")


def _option(name: str, key: str, declared: tuple[SystemOption, ...]) -> SystemOption:
    """The declared option ``key`` of system ``name``; else the error naming it and the valid ones."""
    for option in declared:
        if option.name == key:
            return option
    if not declared:
        raise HotsetError(f"system {name!r} takes no options, got {key}")
    names = [o.name for o in declared]
    hint = did_you_mean(key, names)
    raise HotsetError(
        f"system {name!r} has no option {key!r}{hint}; its options are {', '.join(names)} "
        f"(hotset systems --options {name})"
    )


def parse_option_pairs(name: str, pairs: Iterable[str], *, where: str) -> dict[str, Any]:
    """``option=value`` texts (a spec's brackets, ``--option`` flags) as system ``name``'s
    options, each value parsed in its declared type; ``-`` in a key reads as ``_``."""
    declared = options_of(name)
    options: dict[str, Any] = {}
    for part in pairs:
        key, eq, text = part.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key:
            raise HotsetError(f"{where}: {part!r} is not option=value")
        if key in options:
            raise HotsetError(f"{where}: option {key!r} of system {name!r} is given twice")
        if declared is None:
            options[key] = parse_loose(text)
        else:
            options[key] = _option(name, key, declared).parse(name, text)
    return options


def parse_system(text: str) -> tuple[str, dict[str, Any]]:
    """``"shade"`` or ``"shade[coverage_floor=0.2,unbiased=true]"`` -> (name, options).

    The one grammar of a system everywhere a user names one: ``hotset.loader``,
    ``hotset simulate --system``, ``hotset advise`` and every benchmark's
    ``--systems``. An unknown name lists the systems; an option the system does
    not have is named with the ones it has; a value is read in the option's type
    (``true``/``false``, ``none``, a number, a listed word) or refused, naming
    the option, the value and the type. Ranges are the system's to check when
    built.
    """
    match = _SPEC.match(text) if isinstance(text, str) else None
    if match is None:
        raise HotsetError(f"system spec {text!r:.80} is not NAME or NAME[option=value,...]")
    name, body = match.group(1), match.group(2)
    get_spec(name)
    parts = [] if body is None or not body.strip() else body.split(",")
    return name, parse_option_pairs(name, parts, where=f"system spec {text!r}")


def resolve_system(
    system: str, options: Mapping[str, Any] | None = None, *, source: str = "system_options"
) -> tuple[str, dict[str, Any]]:
    """A spec and options given apart (``source`` says where: ``system_options``, the
    ``--option`` flags) as one (name, options); each option's name and type checked.

    An option both give is an error naming it: neither silently wins.
    """
    name, merged = parse_system(system)
    declared = options_of(name)
    for key, value in (options or {}).items():
        if not isinstance(key, str):
            raise HotsetError(f"{source}: option names are strings, got {key!r:.80}")
        if key in merged:
            raise HotsetError(
                f"option {key!r} of system {name!r} is given twice: in the spec {system!r} "
                f"and in {source}; give it once"
            )
        merged[key] = value if declared is None else _option(name, key, declared).check(name, value)
    return name, merged


def format_system(name: str, options: Mapping[str, Any] | None = None) -> str:
    """(name, options) as the spec that parses back to them: ``quiver[probe=10]``."""
    if not options:
        return name
    body = ",".join(f"{key}={format_value(value)}" for key, value in options.items())
    return f"{name}[{body}]"


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


def capabilities_of(system: str) -> Capabilities:
    """What ``system`` (a name or a spec; its options are checked, not used) needs from a
    driver, read from a tiny probe build of its defaults (no I/O)."""
    name = parse_system(system)[0]
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
    """Build ``name`` (a system name or a spec, ``shade[coverage_floor=0.05]``) over ``n``
    sample ids (0..n-1), with the spec's ``options`` and the keyword ones
    (:func:`resolve_system`: one option given both ways is an error).

    ``layout`` is the dataset's chunk layout, if it has one; a system that reads
    whole units (``capabilities.reads_units``) cannot run without it.
    """
    name, options = resolve_system(name, options, source="the keyword options")
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
