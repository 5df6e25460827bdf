"""Byte budgets written the way people write them ("2gb", "512MiB", 1_000_000, "20%").

Every malformed value -- a wrong type, ``inf``, a number too large for the
int64 fields caches store sizes in -- is a :class:`HotsetError` naming the
option, never a ``TypeError`` or ``OverflowError`` from deep inside.
"""

from __future__ import annotations

import math
import numbers
import re
from decimal import Decimal

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
_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$", re.ASCII)
_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$", re.ASCII)
#: caches keep byte counts in int64 fields; anything larger is a typo, not a budget
MAX_BYTES = 2**63 - 1


def parse_bytes(value: int | float | str, *, name: str = "size") -> int:
    """Parse a byte count; decimal units are powers of 1000, ``*ib`` of 1024."""
    if isinstance(value, bool):
        raise HotsetError(f"{name}: expected a byte count, got {value!r}")
    if isinstance(value, numbers.Integral):
        number: int | Decimal = int(value)
        unit = ""
    elif isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise HotsetError(f"{name}: must be a finite byte count, got {value!r}")
        number = Decimal(float(value))
        unit = ""
    elif isinstance(value, str):
        match = _PATTERN.match(value)
        if match is None:
            raise HotsetError(f"{name}: cannot parse byte count {value[:80]!r}")
        number = Decimal(match.group(1))  # exact: no float rounding, no overflow to inf
        unit = match.group(2).lower()
        if unit not in _UNITS:
            raise HotsetError(f"{name}: unknown unit {match.group(2)!r} in {value!r}")
    else:
        raise HotsetError(
            f"{name}: expected a byte count (an int or a string such as '2gb'), "
            f"got {type(value).__name__} {value!r:.80}"
        )
    if number < 0:
        raise HotsetError(f"{name}: must be non-negative, got {value!r}")
    if isinstance(value, str) and unit in ("", "b") and number != int(number):
        # "0.9" used to be 0 bytes: a string without a unit is a count of whole bytes
        fraction = float(number)
        hint = (
            f"for a fraction of the data set give {name}={fraction!r} (a float) or a "
            f"percentage ('{fraction * 100:g}%'); "
            if 0 < fraction <= 1
            else ""
        )
        raise HotsetError(
            f"{name}={value!r}: a string without a unit is a byte count, and bytes are "
            f"whole; {hint}for bytes give a unit ('{value.strip()}gb')"
        )
    result = int(number * _UNITS[unit])
    if result > MAX_BYTES:
        raise HotsetError(f"{name}: {value!r:.80} is too large (more than {MAX_BYTES} bytes)")
    return result


def parse_budget(value: int | float | str, *, total: int, name: str = "cache") -> int:
    """A cache budget in bytes: a byte count, a fraction or a percentage of ``total``.

    An int (or ``"2gb"``) is a byte count; a float must be a fraction in (0, 1]
    and a string ``"20%"`` a percentage in (0, 100], both of ``total`` (the
    dataset's bytes). A float outside (0, 1] is refused rather than read as bytes:
    ``1.0`` meaning 100% while ``2.0`` meant 2 bytes was a trap.
    """
    if isinstance(value, bool):
        raise HotsetError(f"{name}: expected a budget, got {value!r}")
    if isinstance(value, numbers.Integral):
        return parse_bytes(int(value), name=name)
    if isinstance(value, numbers.Real):
        fraction = float(value)
        if not 0.0 < fraction <= 1.0:
            raise HotsetError(
                f"{name}={value!r}: a float budget is a fraction of the dataset's bytes and "
                "must be in (0, 1]; give bytes as an int or a string ('2gb'), "
                "or a percentage ('20%')"
            )
        return math.floor(Decimal(fraction) * total)
    if isinstance(value, str) and "%" in value:
        match = _PERCENT.match(value)
        if match is None:
            raise HotsetError(f"{name}: cannot parse percentage {value[:80]!r}")
        percent = Decimal(match.group(1))
        if not 0 < percent <= 100:
            raise HotsetError(f"{name}={value!r}: a percentage must be in (0%, 100%]")
        return math.floor(percent * total / 100)
    return parse_bytes(value, name=name)


def format_bytes(n: float) -> str:
    """Human-readable bytes with binary units."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
