"""``hotset systems``: what each named system is and which paper section it follows.

``--options NAME`` lists the options ``NAME[option=value,...]`` takes, from the
declarations the registry checks specs against (:mod:`hotset.systems.options`),
so the listing is what every entry point accepts.
"""

from __future__ import annotations

import json

import click

from hotset.cli.json_option import json_option
from hotset.systems.options import format_value
from hotset.systems.registry import all_specs, capabilities_of, options_of, parse_system


@click.command(name="systems")
@json_option("Print a JSON list instead of a table.")
@click.option(
    "--options",
    "options_for",
    metavar="NAME",
    help="List the options of system NAME (for NAME[option=value,...]): type, default, meaning.",
)
def systems(as_json: bool, options_for: str | None) -> None:
    """List the named systems (name, summary, paper section, what it needs from a driver)."""
    if options_for is not None:
        _echo_options(options_for, as_json=as_json)
        return
    specs = all_specs()
    caps = {s.name: capabilities_of(s.name) for s in specs}
    if as_json:
        rows = [
            {
                "name": s.name,
                "summary": s.summary,
                "source": s.source,
                "capabilities": caps[s.name].describe(),
            }
            for s in specs
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    width = max((len(s.name) for s in specs), default=4)
    for spec in specs:
        click.echo(f"{spec.name:<{width}}  {spec.summary}")
        click.echo(f"{'':<{width}}  [{spec.source}] ({caps[spec.name].describe()})")


def _echo_options(name: str, *, as_json: bool) -> None:
    """One line per option: name, type, default (as a spec spells it), meaning.

    An unknown name is the registry's error, listing the systems.
    """
    name = parse_system(name)[0]  # a spec names its system too
    declared = options_of(name)
    if declared is None:
        click.echo(f"system {name!r} declares no options; its build checks what it is given")
        return
    if as_json:
        rows = [
            {"name": o.name, "type": o.type_name, "default": o.default, "meaning": o.meaning}
            for o in declared
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    if not declared:
        click.echo(f"system {name!r} takes no options")
        return
    cells = [(o.name, o.type_name, format_value(o.default), o.meaning) for o in declared]
    heads = ("option", "type", "default", "meaning")
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads[:3])]
    for row in (heads, *cells):
        click.echo(
            "  ".join(v.ljust(w) for v, w in zip(row[:3], widths, strict=True)) + "  " + row[3]
        )
    click.echo(f"give them as {name}[option=value,...]")
