"""``bench placement``'s arguments and rows (the run itself is the committed result's)."""

from __future__ import annotations

import pytest

from hotset.bench.quiverloop import PlacementOptions, _row
from hotset.errors import HotsetError


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"lead_epochs": 5}, "lead-epochs"),
        ({"probe": 1}, "probe"),
        ({"probe": 30, "n": 600, "batch_size": 16}, "probe"),
        ({"cache_frac": 0.0}, "cache share"),
        ({"epochs": 1, "lead_epochs": 0}, "epochs >= 2"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        PlacementOptions(**kwargs)  # type: ignore[arg-type]


def test_a_row_averages_the_epochs_after_the_cold_one() -> None:
    def epoch(seconds: float, reads: int, caching: bool) -> dict[str, object]:
        return {
            "seconds": seconds,
            "distinct": 100,
            "storage_requests": reads,
            "storage_bytes": reads * 10,
            "rebuild_reads": 0,
            "refused_puts": 0,
            "caching": caching,
            "placement": "none",
            "benefit": 1.0,
        }

    done = {"epochs": [epoch(9.0, 100, True), epoch(2.0, 100, False), epoch(4.0, 50, False)]}
    done["cached_bytes"] = 250
    opts = PlacementOptions(n=100, probe=2)  # two probe windows of 16 fit 100 samples
    row = _row("closed", "gpu", 0.15, done, opts, dataset_bytes=1000, budget=500)
    assert row["epoch_s"] == 3.0 and row["storage_requests_per_epoch"] == 75.0
    assert row["caching"] is False and row["samples_per_s"] == pytest.approx(33.3, abs=0.1)
    assert row["cached_share_end"] == 0.25 and row["namespace_share_end"] == 0.5
    assert row["every_id_every_epoch"] is True
