"""``--store PRESET``: one option shared by every command that models storage."""

from __future__ import annotations

from typing import Any

import click

from hotset.storage.presets import preset_names

store_option = click.option(
    "--store",
    "store_preset",
    default=None,
    metavar="PRESET",
    help=(
        f"Model a named store ({', '.join(preset_names())}; see `hotset stores`); "
        "explicit latency/bandwidth/concurrency options override its figures."
    ),
)


def store_line(models: Any) -> str:
    """``store: ...`` for a command's text output; one model or several (one per latency)."""
    items = models if isinstance(models, list | tuple) else [models]
    return "store: " + "; ".join(m.describe() for m in items)
