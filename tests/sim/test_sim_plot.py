"""``hotset.sim.plot``: one simulation drawn per epoch; bad input is a HotsetError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hotset.errors import HotsetError
from hotset.sim.plot import plot_epochs


def _result(accuracy: bool) -> dict[str, Any]:
    rows = [
        {
            "epoch": e,
            "requests": 100,
            "exact_hits": 10 * e,
            "substitutions": 5 * e,
            "storage_reads": 100 - 15 * e,
            "unique_ids_trained": 100 - 5 * e,
            **({"val_accuracy": 0.5 + 0.1 * e} if accuracy else {}),
        }
        for e in range(4)
    ]
    return {"epochs": rows, "system": "shade", "cache_frac": 0.2, "config": {"options": {}}}


def test_draws_a_png_and_the_accuracy_panel_only_when_there_is_one(tmp_path: Path) -> None:
    with_acc = plot_epochs(_result(accuracy=True), tmp_path / "a.png")
    without = plot_epochs(_result(accuracy=False), tmp_path / "b.png")
    for path in (with_acc, without):
        assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 10_000
    assert with_acc.read_bytes() != without.read_bytes()


def test_no_epochs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="no epochs"):
        plot_epochs({"epochs": []}, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_an_unwritable_path_names_the_file(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "x.png"
    with pytest.raises(HotsetError, match="missing-dir"):
        plot_epochs(_result(accuracy=False), target)
