"""iCACHE's multi-job experiment (Fig. 14), simulated: two jobs, one cache, four schemes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hotset.errors import HotsetError
from hotset.sim.icache_jobs import JobModel, Setup, run_scheme

#: small enough to run in seconds: job A I/O-bound (2 ms), B compute-heavier (10 ms),
#: a miss-only mini-batch of 32 takes 8 x 2 ms = 16 ms of I/O
SMALL = Setup(
    n=4000,
    batch_size=32,
    epochs=8,
    cache_frac=0.5,
    latency_ms=2.0,
    jobs=(JobModel("A", 2.0, 1), JobModel("B", 10.0, 2)),
    correlation=0.3,
)


@pytest.fixture(scope="module")
def rows() -> dict[tuple[str, str], dict[str, object]]:
    out = {}
    for scheme in ("default", "inda", "indb", "icache"):
        for row in run_scheme(SMALL, scheme):
            out[(scheme, str(row["job"]))] = row
    return out


def _f(row: dict[str, object], key: str) -> float:
    value = row[key]
    assert isinstance(value, int | float)
    return float(value)


def test_a_job_s_own_importance_serves_it_best(rows: dict) -> None:
    """INDA favours A, INDB favours B: the cache follows one job's importance."""
    assert _f(rows["inda", "A"], "hit_ratio") > _f(rows["indb", "A"], "hit_ratio")
    assert _f(rows["indb", "B"], "hit_ratio") > _f(rows["inda", "B"], "hit_ratio")
    for scheme in ("inda", "indb", "icache"):  # importance beats LRU on IIS's accesses
        for job in "AB":
            assert _f(rows[scheme, job], "hit_ratio_cached_batches") > _f(
                rows["default", job], "hit_ratio"
            )


def test_icache_keys_by_the_aiv_of_both_jobs_and_weighs_the_io_bound_one_more(rows: dict) -> None:
    a, b = rows["icache", "A"], rows["icache", "B"]
    assert a["aiv_keys"] == "aiv"
    assert _f(a, "benefit_last") > _f(b, "benefit_last") > SMALL.threshold  # both eligible
    # the AIV serves both about as well as each one's own importance serves it alone
    for job, own in (("A", "inda"), ("B", "indb")):
        got = _f(rows["icache", job], "hit_ratio_cached_batches")
        other = "indb" if own == "inda" else "inda"
        assert got > _f(rows[other, job], "hit_ratio")


def test_the_probe_reads_its_batches_from_storage_every_epoch(rows: dict) -> None:
    for job in "AB":
        row = rows["icache", job]
        assert _f(row, "probe_reads_per_epoch") == SMALL.probe * SMALL.batch_size
        assert _f(rows["inda", job], "probe_reads_per_epoch") == 0
        assert _f(row, "hit_ratio") < _f(row, "hit_ratio_cached_batches")
        # epoch 0's probe finds the cache cold (nothing to gain yet); every later one gains
        assert row["eligible_epochs"] == SMALL.epochs - 1
        assert row["coverage"] == rows["default", job]["coverage"]  # same sampler everywhere


def test_no_eligible_job_leaves_the_heap_unkeyed() -> None:
    """The shared cache has no job of its own to fall back on: with nobody eligible
    it keeps the keys it has (none here), as the module docstring says."""
    rows = run_scheme(replace(SMALL, epochs=3, threshold=50.0), "icache")
    assert all(r["aiv_keys"] is None and r["eligible_epochs"] == 0 for r in rows)


def test_the_simulation_is_deterministic() -> None:
    small = replace(SMALL, n=800, epochs=6)
    assert run_scheme(small, "icache") == run_scheme(small, "icache")


def test_bad_setups_name_the_value() -> None:
    with pytest.raises(HotsetError, match="scheme must be one of"):
        run_scheme(SMALL, "lfu")
    with pytest.raises(HotsetError, match="cache_frac must be in"):
        run_scheme(replace(SMALL, cache_frac=0.0), "default")
    with pytest.raises(HotsetError, match="inda needs two jobs"):
        run_scheme(replace(SMALL, jobs=(JobModel("A", 1.0, 1),)), "inda")
