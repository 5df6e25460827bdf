"""``--store PRESET``: one option shared by every command that models storage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from hotset.storage.presets import SIMULATED_DEFAULT, StoreModel, preset_names, resolve_store

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


_F = TypeVar("_F", bound=Callable[..., Any])


def simulated_store_options(command: _F) -> _F:
    """``--store`` and the three figures it fills, for the commands whose store without a
    preset is :data:`~hotset.storage.presets.SIMULATED_DEFAULT` (2 ms, 100 MB/s, 4)."""
    for option in reversed(
        (
            store_option,
            click.option(
                "--latency-ms",
                type=click.FloatRange(min=0),
                default=None,
                help="Per request [default: the --store preset's, else 2].",
            ),
            click.option(
                "--bandwidth-mb-s",
                type=click.FloatRange(min=0, min_open=True),
                default=None,
                help="Link bandwidth [default: the --store preset's, else 100].",
            ),
            click.option(
                "--concurrency",
                type=click.IntRange(min=1),
                default=None,
                help="Requests in flight [default: the --store preset's, else 4].",
            ),
        )
    ):
        command = option(command)
    return command


def simulated_store(
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
) -> StoreModel:
    """What :func:`simulated_store_options` gave: the preset over the simulators' default."""
    return resolve_store(
        store_preset,
        latency_ms=latency_ms,
        bandwidth_mb_s=bandwidth_mb_s,
        max_concurrency=concurrency,
        default=SIMULATED_DEFAULT,
    )


def store_line(models: Any) -> str:
    """``store: ...`` for a command's text output; one model or several (one per latency)."""
    items = models if isinstance(models, list | tuple) else [models]
    return "store: " + "; ".join(m.describe() for m in items)
