"""Options declared once, as a frozen dataclass's fields, for Python and the command line.

A bench suite's parameters were named four times (the ``click.option``, the command's
parameter, the call to ``run`` and ``run``'s signature), and each command repeated the
comma-list parsing of its suite. Now a suite declares one dataclass: a field the command
line sets carries :func:`cli` metadata (its help, its click type, or the parser of a
comma list), :func:`hotset.cli.typed_options.options_from` makes the options from it, and
the dataclass checks itself, so a value built in Python is refused as one typed on the
command line is. This module is below every room (it names no click and no system
module at import), so the bench, the simulator and the loader can all declare options.

Field ``cache_fracs`` becomes ``--cache-fracs`` (``cli(flag=...)`` names it otherwise); a
``bool`` field is an on/off switch (``--x/--no-x``, or a bare ``--x`` with
``switch=False``); a field with ``parse`` is typed as text, shown with its default joined
by commas, and parsed by it (the error names the option). Fields without :func:`cli`
metadata are not on the command line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hotset.errors import HotsetError

#: the key of a field's metadata that holds its :class:`CliSpec`
KEY = "hotset.cli"


@dataclass(frozen=True)
class CliSpec:
    """How one dataclass field appears on the command line."""

    help: str | None = None
    #: the click type (``click.IntRange(min=1)``, a ``click.Choice``), or None for the
    #: default's type
    type: Any = None
    #: text -> value for a field typed as text (a comma list); called with the text and
    #: the option's name, which its error names
    parse: Callable[[str, str], Any] | None = None
    #: the option's name where it is not ``--`` + the field's name with dashes
    flag: str | None = None
    #: a bool field: ``--x/--no-x`` (True) or a bare ``--x`` that sets it (False)
    switch: bool = True

    def option_name(self, field_name: str) -> str:
        return self.flag or "--" + field_name.replace("_", "-")


def cli(
    help: str | None = None,
    *,
    type: Any = None,
    parse: Callable[[str, str], Any] | None = None,
    flag: str | None = None,
    switch: bool = True,
) -> dict[str, CliSpec]:
    """Metadata that puts a field on the command line: ``field(default=..., metadata=cli(...))``."""
    return {KEY: CliSpec(help=help, type=type, parse=parse, flag=flag, switch=switch)}


def texts(text: str, option: str) -> tuple[str, ...]:
    """``"a, b"`` -> ``("a", "b")``; an empty item is an error naming ``option``."""
    items = tuple(item.strip() for item in text.split(","))
    if not items or any(not item for item in items):
        raise HotsetError(f"{option}: expected a comma-separated list, got {text!r}")
    return items


def _numbers(kind: Callable[[str], Any], noun: str) -> Callable[[str, str], tuple[Any, ...]]:
    def parse(text: str, option: str) -> tuple[Any, ...]:
        items = texts(text, option)
        try:
            return tuple(kind(item) for item in items)
        except ValueError:
            raise HotsetError(
                f"{option}: expected a comma-separated list of {noun}, got {text!r}"
            ) from None

    return parse


#: ``"0,1,2"`` -> ``(0, 1, 2)``
ints = _numbers(int, "integers")
#: ``"0.05,0.2"`` -> ``(0.05, 0.2)``
floats = _numbers(float, "numbers")


def systems(text: str, option: str) -> tuple[str, ...]:
    """System specs (``"lru,shade[unbiased=true]"``), commas inside ``[...]`` kept with
    their spec; at least one."""
    from hotset.systems.registry import split_systems

    out = tuple(split_systems(text))
    if not out:
        raise HotsetError(f"{option}: expected at least one system, got {text!r}")
    return out


def systems_or(default: tuple[str, ...]) -> Callable[[str, str], tuple[str, ...]]:
    """A ``--systems`` parser for which an empty value means ``default`` (a suite's list)."""

    def parse(text: str, option: str) -> tuple[str, ...]:
        return systems(text, option) if text else default

    return parse


def default_of(field: dataclasses.Field[Any]) -> Any:
    """A field's default (its factory's value), or None where it has none."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def shown(value: Any) -> Any:
    """A parsed field's default as typed: a sequence joined by commas."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return value


def cli_fields(cls: type) -> list[tuple[dataclasses.Field[Any], CliSpec]]:
    """The fields of dataclass ``cls`` that are on the command line, in declared order."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    return [(f, f.metadata[KEY]) for f in dataclasses.fields(cls) if KEY in f.metadata]


def from_texts(cls: type, values: dict[str, Any]) -> Any:
    """An instance of ``cls`` from the command line's values: parsed fields parsed."""
    parsed = dict(values)
    for field, spec in cli_fields(cls):
        if spec.parse is not None and isinstance(parsed.get(field.name), str):
            parsed[field.name] = spec.parse(parsed[field.name], spec.option_name(field.name))
    return cls(**parsed)
