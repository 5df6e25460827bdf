"""``hotset systems``: what each named system is and which paper section it follows."""

from __future__ import annotations

import json

import click

from hotset.systems.registry import all_specs, capabilities_of


@click.command(name="systems")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
def systems(as_json: bool) -> None:
    """List the named systems (name, summary, paper section, what it needs from a driver)."""
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
