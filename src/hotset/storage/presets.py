"""Named store models: the figures a remote store is simulated with, and where they come from.

Every command that models storage (the real-clock benches, the simulator, ``advise``)
used to take bare ``--latency-ms`` / ``--bandwidth-mb-s`` / ``--concurrency`` numbers,
so a reader could not tell which real store a table stood for. A :class:`StorePreset`
names one kind of store and carries the public figures it is calibrated from in
``source``; where no public figure exists for a value it says that the value is a
rounded assumption. The figures feed the cost model of
:class:`~hotset.storage.throttled.ThrottledStore` (per-request latency, one shared
link, requests in flight); nothing here measures anything.

:func:`resolve_store` combines a preset with explicit values (explicit wins), so a
user can start from ``nfs-10gbe`` and change only its latency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hotset.errors import HotsetError, did_you_mean
from hotset.storage.throttled import check_link_numbers


@dataclass(frozen=True)
class StorePreset:
    """One named kind of store: ``latency_ms`` per request, ``bandwidth_mb_s`` of one
    shared link (MB = 10^6 bytes), at most ``max_concurrency`` requests in flight."""

    name: str
    latency_ms: float
    bandwidth_mb_s: float
    max_concurrency: int
    summary: str
    source: str


@dataclass(frozen=True)
class StoreModel:
    """The store a command actually ran with: a preset's figures after overrides, or the
    command's own values; ``preset`` is None when no preset was named."""

    latency_ms: float
    bandwidth_mb_s: float
    max_concurrency: int
    preset: str | None = None

    def describe(self) -> str:
        """One line for a command's output, e.g. ``nfs-10gbe (2 ms, 1250 MB/s, 8 in flight)``."""
        link = (
            "unlimited bandwidth"
            if math.isinf(self.bandwidth_mb_s)
            else f"{self.bandwidth_mb_s:g} MB/s"
        )
        figures = f"{self.latency_ms:g} ms, {link}, {self.max_concurrency} in flight"
        if self.preset is None:
            return f"latency {figures} (no preset)"
        return f"{self.preset} ({figures})"

    def link(self) -> dict[str, Any]:
        """The model as the simulators' keyword arguments (``run_live``, ``run_one``,
        ``advise``): latency_ms, bandwidth_mb_s, concurrency."""
        return {
            "latency_ms": self.latency_ms,
            "bandwidth_mb_s": self.bandwidth_mb_s,
            "concurrency": self.max_concurrency,
        }

    def throttle(self, inner: Any) -> Any:
        """``inner`` behind this model on the real clock, one server for the whole job
        (:class:`~hotset.storage.shared_throttle.SharedThrottledStore`)."""
        from hotset.storage.shared_throttle import SharedThrottledStore

        return SharedThrottledStore(
            inner,
            latency_ms=self.latency_ms,
            bandwidth_mb_s=self.bandwidth_mb_s,
            max_concurrency=self.max_concurrency,
        )

    def as_dict(self) -> dict[str, Any]:
        """The ``store`` field of a command's JSON; an unlimited link is ``null`` (JSON has
        no infinity)."""
        return {
            "preset": self.preset,
            "latency_ms": self.latency_ms,
            "bandwidth_mb_s": None if math.isinf(self.bandwidth_mb_s) else self.bandwidth_mb_s,
            "max_concurrency": self.max_concurrency,
        }


_PRESETS: tuple[StorePreset, ...] = (
    StorePreset(
        name="local-nvme",
        latency_ms=0.085,
        bandwidth_mb_s=3200.0,
        max_concurrency=32,
        summary="A local datacenter NVMe SSD (PCIe 3.0 x4).",
        source=(
            "Intel SSD DC P4500 2 TB as listed in Lenovo's product guide (Table 2, "
            "'Technical specifications'): random read access latency 85 us, sequential read "
            "3.2 GBps. 32 in flight is a rounded assumption (a common queue depth), not a "
            "vendor figure."
        ),
    ),
    StorePreset(
        name="nfs-10gbe",
        latency_ms=2.0,
        bandwidth_mb_s=1250.0,
        max_concurrency=8,
        summary="An NFS server reached over 10 Gb Ethernet.",
        source=(
            "Bandwidth: 10 Gb/s = 1250 MB/s, the NFS read bandwidth the iCACHE and ImPACT "
            "papers state for their cloud runs ('The maximum read bandwidth of the NFS is "
            "about 10Gb/s', iCACHE section V-G, ImPACT section V-H); SHADE measured on an "
            "HDD-based NFS server over a 10 Gbps interconnect (section 6.1). Latency 2 ms and 8 in flight "
            "are rounded assumptions (no paper states them); 2 ms is hotset's long-standing "
            "default."
        ),
    ),
    StorePreset(
        name="pfs-small-files",
        latency_ms=5.0,
        bandwidth_mb_s=3000.0,
        max_concurrency=16,
        summary="A parallel file system (Lustre, OrangeFS) read one small file at a time.",
        source=(
            "Bandwidth: 3 GB/s, the per-node network bandwidth of Brand's A100 setup, whose "
            "training data sits on Lustre (Brand, section 5, Table 2). iCACHE and ImPACT stripe their data over four OrangeFS "
            "servers with 64 KB stripes (section V-A). Latency 5 ms and 16 in flight are "
            "rounded assumptions standing for a metadata round trip (open) plus a data "
            "request per small file; no seed paper states a per-file latency."
        ),
    ),
    StorePreset(
        name="cloud-nas",
        latency_ms=5.0,
        bandwidth_mb_s=380.0,
        max_concurrency=8,
        summary="A cloud NAS (managed NFS) with a narrow per-node link.",
        source=(
            "Bandwidth: 0.38 GB/s, the per-node network bandwidth of Brand's A10 and P100 "
            "setups, whose training data sits on Apsara File Storage NAS (Brand, section 5, "
            "Table 2). Latency 5 ms and 8 in flight are "
            "rounded assumptions."
        ),
    ),
    StorePreset(
        name="s3-small",
        latency_ms=30.0,
        bandwidth_mb_s=1250.0,
        max_concurrency=16,
        summary="An object store such as Amazon S3, one GET per small object.",
        source=(
            "Latency: AWS, 'Best Practices Design Patterns: Optimizing Amazon S3 "
            "Performance', section 'Timeouts and Retries for Latency-Sensitive "
            "Applications': for small requests (under 512 KB) 'median latencies are often "
            "in the tens of milliseconds range'; 30 ms is a rounded value inside that "
            "range. Bandwidth 1250 MB/s (a 10 Gb/s client NIC) and 16 in flight are rounded "
            "assumptions."
        ),
    ),
)

PRESETS: dict[str, StorePreset] = {p.name: p for p in _PRESETS}


def preset_names() -> tuple[str, ...]:
    """The preset names, in the order ``hotset stores`` lists them."""
    return tuple(PRESETS)


def get_preset(name: str) -> StorePreset:
    """The preset called ``name``; an unknown name is a HotsetError naming the valid ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise HotsetError(
            f"unknown store preset {name!r}{did_you_mean(name, PRESETS)}; choose one of "
            f"{', '.join(PRESETS)} (see `hotset stores`)"
        ) from None


#: the store the simulators model without ``--store`` (simulate --system, advise, bench
#: hitratio and train): what their committed results used, kept so answers stay comparable
SIMULATED_DEFAULT = StoreModel(latency_ms=2.0, bandwidth_mb_s=100.0, max_concurrency=4)


def resolve_store(
    preset: str | None,
    *,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    max_concurrency: int | None,
    default: StoreModel | None = None,
) -> StoreModel:
    """The store a command runs with: ``preset``'s figures, each overridden by an explicit
    (non-None) value; without a preset, the explicit values over ``default`` (the
    command's own defaults, so a command without ``--store`` runs exactly as before).

    A value left unset with neither a preset nor a default is a HotsetError, as is a
    value the store model rejects.
    """
    base = get_preset(preset) if preset is not None else default
    values: dict[str, Any] = {
        "latency_ms": latency_ms,
        "bandwidth_mb_s": bandwidth_mb_s,
        "max_concurrency": max_concurrency,
    }
    for key, value in values.items():
        if value is None:
            if base is None:
                raise HotsetError(f"{key}: give a value or a store preset ({', '.join(PRESETS)})")
            values[key] = getattr(base, key)
    latency, bandwidth = check_link_numbers(
        values["latency_ms"], values["bandwidth_mb_s"], values["max_concurrency"]
    )
    return StoreModel(
        latency_ms=latency,
        bandwidth_mb_s=bandwidth,
        max_concurrency=values["max_concurrency"],
        preset=preset,
    )
