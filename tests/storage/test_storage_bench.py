"""hotset.bench.store.run_throttled: both clocks read everything and respect the bound.

(Lives here because the bench module is a thin driver over ThrottledStore; move it
to tests/bench/ with the rest of the bench suite if that directory takes it.)
"""

from __future__ import annotations

import math

import fsspec
import pytest

from hotset.bench.store import run_throttled
from hotset.errors import HotsetError


def test_small_run_reports_both_clocks_against_the_bound() -> None:
    before = set(fsspec.filesystem("memory").store)
    result = run_throttled(
        n=60, threads=4, latency_ms=1.0, concurrency=3, bandwidth_mb_s=50.0, sample_bytes=500
    )
    bound = max(math.ceil(60 / 3) * 0.001, 60 * 500 / 50e6)
    assert result["lower_bound_seconds"] == pytest.approx(bound)
    for clock in ("real", "virtual"):
        figures = result[clock]
        assert figures["reads"] == 60
        assert figures["bytes_read"] == 60 * 500
        assert figures["seconds"] >= bound * (1 - 1e-9)
        assert figures["samples_per_s"] == pytest.approx(60 / figures["seconds"])
    # The virtual makespan obeys the model's upper bound; the real run cannot beat the bound.
    assert result["virtual"]["seconds"] <= 60 * 0.001 + 60 * 500 / 50e6 + 1e-9
    assert set(fsspec.filesystem("memory").store) == before  # cleaned up after itself


@pytest.mark.parametrize(
    ("options", "culprit"),
    [({"n": 0}, "n: .*0"), ({"threads": 0}, "threads: .*0"), ({"sample_bytes": -1}, "-1")],
)
def test_bad_arguments_are_named(options: dict[str, int], culprit: str) -> None:
    with pytest.raises(HotsetError, match=culprit):
        run_throttled(**options)
