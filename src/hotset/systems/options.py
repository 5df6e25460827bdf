"""A system's options: name, type, default and one-line meaning, declared once.

Each system module may hold ``OPTIONS: dict[str, tuple[SystemOption, ...]]``
(system name -> its options) beside ``SPECS``. The registry reads it to check a
spec's options before anything is built -- a misspelled option is then named as
an unknown *option* of that system, with the valid ones, and a value of the
wrong type names the option, the value and the type -- and ``hotset systems
--options NAME`` prints it. :func:`declare` takes the defaults from the dict the
system's ``build`` itself uses, so the listing cannot drift from what is built.

A type is a ``|``-list of ``number`` (int or float), ``int``, ``bool``, ``none``,
``path`` (any text: a file the system reads, such as ``irreducible=losses.npy``)
and quoted-free literal words (the allowed strings), e.g. ``"int|none"`` or
``"blocks|head|none"``. Only the type is checked here; ranges (a share in
``[0, 1)``, ``rep_factor`` a multiple of 0.5) stay with the system, which knows
them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hotset.errors import HotsetError

__all__ = ["SystemOption", "declare", "format_value", "parse_loose"]

_KINDS = ("number", "int", "bool", "none", "path")
#: how a boolean may be spelled in a spec or an ``--option`` value
_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")


@dataclass(frozen=True)
class SystemOption:
    """One option: its name, type (see the module docstring), default and meaning."""

    name: str
    kind: str
    default: Any
    meaning: str

    @property
    def _parts(self) -> tuple[str, ...]:
        return tuple(p.strip() for p in self.kind.split("|"))

    @property
    def choices(self) -> tuple[str, ...]:
        """The literal strings the option takes (empty: no string is valid)."""
        return tuple(p for p in self._parts if p not in _KINDS)

    @property
    def type_name(self) -> str:
        """The type in words: ``number``, ``int or none``, ``'blocks', 'head' or none``."""
        words = [p for p in self._parts if p in _KINDS and p != "none"]
        words += [repr(c) for c in self.choices]
        if "none" in self._parts:
            words.append("none")
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]

    def _bad(self, system: str, value: object) -> HotsetError:
        return HotsetError(
            f"system {system!r}: option {self.name} got {value!r:.80}, expected {self.type_name}"
        )

    def parse(self, system: str, text: str) -> Any:
        """The value a spec or ``--option`` spells as ``text``, in the option's type."""
        word = text.strip()
        low = word.lower()
        parts = self._parts
        if "none" in parts and low == "none":
            return None
        if "bool" in parts and low in _TRUE + _FALSE:
            return low in _TRUE
        if "int" in parts or "number" in parts:
            try:
                return int(word)
            except ValueError:
                pass
        if "number" in parts:
            try:
                return float(word)
            except ValueError:
                pass
        if word in self.choices or ("path" in parts and word):
            return word
        raise self._bad(system, word)

    def check(self, system: str, value: object) -> Any:
        """``value`` given from Python (``system_options=``): its type checked, numpy
        scalars made plain Python ones (a system checks ``isinstance(v, int)``)."""
        if isinstance(value, np.generic):
            value = value.item()
        parts = self._parts
        if isinstance(value, os.PathLike) and "path" in parts:
            value = os.fspath(value)
        ok = (
            (value is None and "none" in parts)
            or (isinstance(value, bool) and "bool" in parts)
            or (
                isinstance(value, int)
                and not isinstance(value, bool)
                and ("int" in parts or "number" in parts)
            )
            or (isinstance(value, float) and "number" in parts)
            or (isinstance(value, str) and value in self.choices)
            or (isinstance(value, str) and value != "" and "path" in parts)
        )
        if not ok:
            raise self._bad(system, value)
        return value


def declare(
    defaults: Mapping[str, Any], docs: Mapping[str, tuple[str, str]]
) -> tuple[SystemOption, ...]:
    """Options from a system's own defaults and ``{name: (type, meaning)}``.

    Both must name the same options: a default without words (or the reverse)
    is a programming error, raised when the system module is imported.
    """
    if set(defaults) != set(docs):
        raise TypeError(
            f"options declared {sorted(docs)} do not match the defaults {sorted(defaults)}"
        )
    return tuple(
        SystemOption(name, docs[name][0], defaults[name], " ".join(docs[name][1].split()))
        for name in defaults
    )


def parse_loose(text: str) -> Any:
    """A value for a system that declares no options: booleans, none, int, float, text."""
    word = text.strip()
    low = word.lower()
    if low in _TRUE + _FALSE:
        return low in _TRUE
    if low == "none":
        return None
    for kind in (int, float):
        try:
            return kind(word)
        except ValueError:
            pass
    return word


def format_value(value: Any) -> str:
    """``value`` as a spec spells it, so that parsing the result gives it back."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)  # 3.0 stays "3.0", a float when parsed back
