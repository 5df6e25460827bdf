"""``hotset stores``: the named store presets, their figures and where each figure comes from."""

from __future__ import annotations

import json
import math
from typing import Any

import click

from hotset.cli.json_option import json_option
from hotset.storage.presets import PRESETS, StorePreset


def _row(p: StorePreset) -> dict[str, Any]:
    return {
        "name": p.name,
        "latency_ms": p.latency_ms,
        "bandwidth_mb_s": None if math.isinf(p.bandwidth_mb_s) else p.bandwidth_mb_s,
        "max_concurrency": p.max_concurrency,
        "summary": p.summary,
        "source": p.source,
    }


@click.command(name="stores")
@json_option("Print a JSON list instead of a table.")
def stores(as_json: bool) -> None:
    """List the store presets that --store takes (simulate --system, advise, bench loader,
    bench brand): latency per request, link bandwidth, requests in flight, and sources."""
    if as_json:
        click.echo(json.dumps([_row(p) for p in PRESETS.values()], indent=2))
        return
    width = max(len(name) for name in PRESETS)
    for p in PRESETS.values():
        click.echo(
            f"{p.name:<{width}}  {p.latency_ms:g} ms, {p.bandwidth_mb_s:g} MB/s, "
            f"{p.max_concurrency} in flight: {p.summary}"
        )
        click.echo(f"{'':<{width}}  [{p.source}]")
