"""Click options generated from an options dataclass (:mod:`hotset.options`).

``@options_from(RanksOptions)`` above a command's other decorators adds one option per
field with :func:`~hotset.options.cli` metadata, in declared order and before the
command's own, and calls the command with one ``RanksOptions`` as ``opts`` in their
place. What the dataclass refuses is a :class:`~hotset.errors.HotsetError` naming the
option, as every command's bad input is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

import click

from hotset.options import CliSpec, cli_fields, default_of, from_texts, shown

_F = TypeVar("_F", bound=Callable[..., Any])


def _option(field: dataclasses.Field[Any], spec: CliSpec) -> Callable[[_F], _F]:
    name = spec.option_name(field.name)
    default = default_of(field)
    if isinstance(default, bool) and spec.parse is None and spec.type is None:
        decl = f"{name}/--no-{name[2:]}" if spec.switch else name
        return click.option(
            decl,
            field.name,
            is_flag=True,
            default=default,
            show_default=spec.switch,
            help=spec.help,
        )
    if spec.parse is not None:
        return click.option(
            name, field.name, type=str, default=shown(default), show_default=True, help=spec.help
        )
    return click.option(
        name,
        field.name,
        type=spec.type,
        default=default,
        show_default=default is not None,
        help=spec.help,
    )


def options_from(cls: type, *, param: str = "opts") -> Callable[[_F], _F]:
    """Decorate a click command's function: ``cls``'s fields become options, and the
    function gets one ``cls`` instance as ``param`` in their place."""
    declared = cli_fields(cls)
    names = [field.name for field, _ in declared]

    def decorate(function: _F) -> _F:
        def command(**kwargs: Any) -> Any:
            opts = from_texts(cls, {name: kwargs.pop(name) for name in names})
            return function(**{param: opts}, **kwargs)

        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(command, attr, getattr(function, attr))
        decorated: Any = command
        decorated.__click_params__ = list(getattr(function, "__click_params__", []))
        for field, spec in reversed(declared):
            decorated = _option(field, spec)(decorated)
        return decorated

    return decorate
