"""What ``hotset simulate``'s modes share: list parsing, the system and its options, tables, JSON.

It lives apart so that :mod:`hotset.cli.simulate` (the command and its trace,
sampler and live modes) and :mod:`hotset.cli.simulate_nodes` (the ``--nodes``
mode) both import it and neither imports the other's helpers: the command
imports the node mode, never the reverse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from hotset.errors import HotsetError


def split_list(value: str, name: str) -> list[str]:
    """``a,b,c`` as its stripped items; an empty item is a usage error naming ``name``."""
    parts = [p.strip() for p in value.split(",")]
    if not all(parts):
        raise click.BadParameter(f"empty item in {value!r}", param_hint=name)
    return parts


def floats(value: str | None, name: str) -> list[float] | None:
    """A comma list of numbers (None when the option was not given)."""
    if value is None:
        return None
    try:
        return [float(v) for v in split_list(value, name)]
    except ValueError:
        raise click.BadParameter(f"expected numbers, got {value!r}", param_hint=name) from None


def ints(value: str | None, name: str) -> list[int] | None:
    """A comma list of integers (None when the option was not given)."""
    if value is None:
        return None
    try:
        return [int(v) for v in split_list(value, name)]
    except ValueError:
        raise click.BadParameter(f"expected integers, got {value!r}", param_hint=name) from None


def system_and_options(system: str, pairs: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """``--system NAME[option=value,...]`` and ``--option KEY=VALUE`` flags as (name, options).

    Both are read by the registry's one parser (:mod:`hotset.systems.registry`), each
    value in its option's type; an option given both ways is an error naming it.
    """
    from hotset.systems.auto import AUTO, is_auto
    from hotset.systems.registry import parse_option_pairs, parse_system, resolve_system

    if is_auto(system):  # resolved where the data set is known, as the loader does
        if pairs:
            raise HotsetError(f"--option {pairs[0]!r}: auto takes no options; name the system")
        return AUTO, {}
    name, _ = parse_system(system)
    flags = parse_option_pairs(name, pairs, where="--option")
    return resolve_system(system, flags, source="--option")


def cell(value: Any) -> str:
    """One table cell: floats to four significant digits, anything else as ``str``."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def echo_rows(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print ``rows`` under ``header``, each column as wide as its widest cell."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def echo_records(
    records: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None
) -> None:
    """A table of dicts: ``columns`` in that order (those absent from every record are
    dropped), or every key of the first record when ``columns`` is None."""
    if not records:
        return
    if columns is None:
        header = list(records[0])
    else:
        header = [c for c in columns if any(c in r for r in records)]
    echo_rows(header, [[cell(r.get(c, "")) for c in header] for r in records])


def emit_json(text: str, *, out: Path | None, as_json: bool) -> bool:
    """Write the JSON to ``out`` if given; print it (and say so) with ``--json``."""
    if out is not None:
        try:
            out.write_text(text + "\n")
        except OSError as exc:
            raise HotsetError(f"cannot write {out}: {exc.strerror or exc}") from exc
    if as_json:
        click.echo(text)
    return as_json
