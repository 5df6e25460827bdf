"""``--store`` for the real-clock benches with one modeled server per run (multijob, ranks).

``bench multijob`` and ``bench ranks`` model one storage server for all their
processes (:class:`~hotset.storage.shared_throttle.SharedThrottledStore`) at one
latency, where ``bench loader`` and ``bench brand`` sweep a list of latencies. They
take the same ``--store PRESET`` as every other command (``hotset.cli.store_option``)
and single latency/bandwidth/concurrency overrides; without a preset each keeps the
store its committed results used (2 ms, an unlimited link, 4 in flight).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from hotset.cli.store_option import store_option
from hotset.storage.presets import StoreModel, resolve_store

_F = TypeVar("_F", bound=Callable[..., Any])


def job_store_options(default: StoreModel) -> Callable[[_F], _F]:
    """``--store`` and the three figures it fills; ``default`` is the bench's store without
    a preset, named in each option's help."""
    link = "unlimited" if default.as_dict()["bandwidth_mb_s"] is None else default.bandwidth_mb_s

    def decorate(command: _F) -> _F:
        for option in reversed(
            (
                store_option,
                click.option(
                    "--latency-ms",
                    type=click.FloatRange(min=0),
                    default=None,
                    help=f"Per request [default: the --store preset's, else {default.latency_ms:g}].",
                ),
                click.option(
                    "--bandwidth-mb-s",
                    type=click.FloatRange(min=0, min_open=True),
                    default=None,
                    help=f"One link shared by every process [default: the --store preset's, "
                    f"else {link}].",
                ),
                click.option(
                    "--concurrency",
                    type=click.IntRange(min=1),
                    default=None,
                    help="Requests in flight at the server, across every process "
                    f"[default: the --store preset's, else {default.max_concurrency}].",
                ),
            )
        ):
            command = option(command)
        return command

    return decorate


def job_store(
    default: StoreModel,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
) -> StoreModel:
    """What :func:`job_store_options` gave: the preset (or ``default``), explicit values over it."""
    return resolve_store(
        store_preset,
        latency_ms=latency_ms,
        bandwidth_mb_s=bandwidth_mb_s,
        max_concurrency=concurrency,
        default=default,
    )
