"""The store models of the real-clock benches: one per latency, from --store and explicit values.

``bench loader`` and ``bench brand`` run one table per latency; without ``--store`` they
keep their own latency lists, 4 requests in flight and an unlimited link, as always.
"""

from __future__ import annotations

import math

from hotset.errors import HotsetError
from hotset.storage.presets import StoreModel, get_preset, resolve_store

DEFAULT_CONCURRENCY = 4


def bench_stores(
    preset: str | None,
    *,
    latencies: list[float] | None,
    default_latencies: tuple[float, ...],
    bandwidth_mb_s: float | None,
    concurrency: int | None,
) -> list[StoreModel]:
    """One store model per latency the bench runs: explicit latencies, else the preset's
    single latency, else the bench's own list; bandwidth and concurrency from the
    explicit value, else the preset, else unlimited and 4."""
    if latencies is not None and not latencies:
        raise HotsetError("--latency-ms: give at least one latency")
    if latencies is None:
        latencies = [get_preset(preset).latency_ms] if preset else list(default_latencies)
    return [
        resolve_store(
            preset,
            latency_ms=latency,
            bandwidth_mb_s=bandwidth_mb_s,
            max_concurrency=concurrency,
            default=StoreModel(latency, math.inf, DEFAULT_CONCURRENCY),
        )
        for latency in latencies
    ]
