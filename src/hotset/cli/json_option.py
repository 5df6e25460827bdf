"""``--json``, declared once for every command that can print its result as JSON.

Twenty-two commands each declared the flag by hand; one definition keeps its name,
its parameter (``as_json``) and its meaning the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

_F = TypeVar("_F", bound=Callable[..., Any])

#: what the flag does where a command says nothing more specific
DEFAULT_HELP = "Print the result as JSON instead of a table."


def json_option(help: str = DEFAULT_HELP) -> Callable[[_F], _F]:
    """The ``--json`` flag, passed to the command as ``as_json``."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def json_path_option(help: str) -> Callable[[_F], _F]:
    """``--json [PATH]``: write the JSON to PATH, or bare ``--json`` to stdout (``-``)."""
    return click.option(
        "--json",
        "as_json",
        is_flag=False,
        flag_value="-",
        default=None,
        type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
        help=help,
    )
