"""Named systems: sampler + scorer + policy + importance table (see :mod:`hotset.systems.base`)."""

from hotset.systems.base import System, SystemSpec
from hotset.systems.registry import (
    all_specs,
    build_system,
    capabilities_of,
    get_spec,
    register_module,
    system_names,
)

__all__ = [
    "System",
    "SystemSpec",
    "all_specs",
    "build_system",
    "capabilities_of",
    "get_spec",
    "register_module",
    "system_names",
]
