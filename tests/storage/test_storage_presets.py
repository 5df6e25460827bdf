"""Store presets: each models its own figures in a ThrottledStore, and explicit values win."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hotset.errors import HotsetError
from hotset.storage import LocalStore, ThrottledStore
from hotset.storage.presets import (
    PRESETS,
    StoreModel,
    get_preset,
    preset_names,
    resolve_store,
)

NBYTES = 110_000  # about an ImageNet sample


@pytest.fixture
def inner(tmp_path: Path) -> LocalStore:
    (tmp_path / "big").write_bytes(bytes(NBYTES))
    (tmp_path / "empty").write_bytes(b"")
    return LocalStore(tmp_path)


def _store(inner: LocalStore, name: str) -> ThrottledStore:
    model = resolve_store(name, latency_ms=None, bandwidth_mb_s=None, max_concurrency=None)
    return ThrottledStore(
        inner,
        latency_ms=model.latency_ms,
        bandwidth_mb_s=model.bandwidth_mb_s,
        max_concurrency=model.max_concurrency,
        clock="virtual",
    )


def test_the_issue_asks_for_these_kinds_of_store() -> None:
    assert {"local-nvme", "nfs-10gbe", "pfs-small-files", "s3-small"} <= set(preset_names())


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_one_read_costs_latency_plus_bytes_over_bandwidth(inner: LocalStore, name: str) -> None:
    preset = get_preset(name)
    store = _store(inner, name)
    assert store.read("big") == bytes(NBYTES)
    expected = preset.latency_ms / 1e3 + NBYTES / (preset.bandwidth_mb_s * 1e6)
    assert store.modeled_seconds == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_the_preset_bounds_requests_in_flight(inner: LocalStore, name: str) -> None:
    """max_concurrency empty reads issued together finish in one latency; one more needs two."""
    preset = get_preset(name)
    store = _store(inner, name)
    store.read_many(["empty"] * preset.max_concurrency)
    assert store.modeled_seconds == pytest.approx(preset.latency_ms / 1e3)
    store.read("empty")
    assert store.modeled_seconds == pytest.approx(2 * preset.latency_ms / 1e3)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_says_where_its_figures_come_from(name: str) -> None:
    preset = get_preset(name)
    assert preset.summary and len(preset.source) > 40
    assert math.isfinite(preset.bandwidth_mb_s) and preset.latency_ms > 0


def test_explicit_values_override_the_preset_one_by_one() -> None:
    nfs = get_preset("nfs-10gbe")
    model = resolve_store("nfs-10gbe", latency_ms=7.0, bandwidth_mb_s=None, max_concurrency=None)
    assert (model.latency_ms, model.bandwidth_mb_s, model.max_concurrency) == (
        7.0,
        nfs.bandwidth_mb_s,
        nfs.max_concurrency,
    )
    model = resolve_store("nfs-10gbe", latency_ms=None, bandwidth_mb_s=10.0, max_concurrency=2)
    assert (model.latency_ms, model.bandwidth_mb_s, model.max_concurrency) == (
        nfs.latency_ms,
        10.0,
        2,
    )
    assert model.preset == "nfs-10gbe"


def test_without_a_preset_the_command_default_fills_what_is_not_given() -> None:
    default = StoreModel(latency_ms=2.0, bandwidth_mb_s=100.0, max_concurrency=4)
    model = resolve_store(
        None, latency_ms=None, bandwidth_mb_s=None, max_concurrency=None, default=default
    )
    assert model == default
    model = resolve_store(
        None, latency_ms=9.0, bandwidth_mb_s=None, max_concurrency=None, default=default
    )
    assert model == StoreModel(9.0, 100.0, 4)
    with pytest.raises(HotsetError, match="latency_ms: give a value or a store preset"):
        resolve_store(None, latency_ms=None, bandwidth_mb_s=1.0, max_concurrency=1)


def test_an_unknown_preset_is_named_with_the_valid_ones() -> None:
    with pytest.raises(HotsetError) as exc:
        resolve_store("nfs-1gbe", latency_ms=None, bandwidth_mb_s=None, max_concurrency=None)
    message = str(exc.value)
    assert "'nfs-1gbe' (did you mean 'nfs-10gbe'?)" in message
    assert all(name in message for name in PRESETS)


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("s3-smal", "s3-small"), ("S3-Small", "s3-small"), ("cloudnas", "cloud-nas")],
)
def test_a_misspelt_preset_gets_a_suggestion(typed: str, meant: str) -> None:
    with pytest.raises(HotsetError, match=rf"'{typed}' \(did you mean '{meant}'\?\)"):
        get_preset(typed)
    with pytest.raises(HotsetError) as exc:
        get_preset("zzz")
    assert "did you mean" not in str(exc.value)


@pytest.mark.parametrize(
    ("latency", "bandwidth", "concurrency", "named"),
    [
        (-1.0, None, None, "latency_ms"),
        (None, 0.0, None, "bandwidth_mb_s"),
        (None, None, 0, "max_concurrency"),
    ],
)
def test_a_bad_override_is_named(
    latency: float | None, bandwidth: float | None, concurrency: int | None, named: str
) -> None:
    with pytest.raises(HotsetError, match=named):
        resolve_store(
            "s3-small", latency_ms=latency, bandwidth_mb_s=bandwidth, max_concurrency=concurrency
        )


def test_describe_names_the_preset_or_says_there_is_none() -> None:
    nfs = resolve_store("nfs-10gbe", latency_ms=None, bandwidth_mb_s=None, max_concurrency=None)
    assert nfs.describe() == "nfs-10gbe (2 ms, 1250 MB/s, 8 in flight)"
    bare = StoreModel(latency_ms=0.5, bandwidth_mb_s=math.inf, max_concurrency=4)
    assert bare.describe() == "latency 0.5 ms, unlimited bandwidth, 4 in flight (no preset)"
    assert bare.as_dict()["bandwidth_mb_s"] is None  # JSON has no infinity
