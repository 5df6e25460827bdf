"""Byte budgets written the way people write them ("2gb", "512MiB", 1_000_000)."""

from __future__ import annotations

import re

from hotset.errors import HotsetError

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$")


def parse_bytes(value: int | float | str, *, name: str = "size") -> int:
    """Parse a byte count; decimal units are powers of 1000, ``*ib`` of 1024."""
    if isinstance(value, bool):
        raise HotsetError(f"{name}: expected a byte count, got {value!r}")
    if isinstance(value, int | float):
        number = float(value)
        unit = ""
    else:
        match = _PATTERN.match(value)
        if match is None:
            raise HotsetError(f"{name}: cannot parse byte count {value!r}")
        number = float(match.group(1))
        unit = match.group(2).lower()
        if unit not in _UNITS:
            raise HotsetError(f"{name}: unknown unit {match.group(2)!r} in {value!r}")
    if number < 0 or number != number:
        raise HotsetError(f"{name}: must be non-negative, got {value!r}")
    return int(number * _UNITS[unit])


def format_bytes(n: float) -> str:
    """Human-readable bytes with binary units."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
