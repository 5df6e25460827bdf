"""``hotset advise`` end to end: table, summary line, plot and JSON files."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_cli

from hotset.data import SynthConfig, make_synth


def test_advise_prints_and_writes(tmp_path: Path) -> None:
    data = tmp_path / "ds"
    make_synth(data, SynthConfig(n=300, image_size=8, classes=3, seed=5), workers=1)
    code, out = run_cli(
        "advise",
        "--dataset",
        str(data),
        "--systems",
        "minio",
        "--sizes",
        "0.2,0.9",
        "--epochs",
        "2",
        "--target",
        "0.5",
        "--plot",
        str(tmp_path / "a.png"),
        "--json",
        str(tmp_path / "a.json"),
    )
    assert code == 0, out
    assert "minio: " in out and "50% exact hits need 90% of the data" in out
    assert "simulated" in out
    assert (tmp_path / "a.png").stat().st_size > 0
    assert len(json.loads((tmp_path / "a.json").read_text())["table"]) == 2


def test_bad_sizes_are_one_line(tmp_path: Path) -> None:
    code, out = run_cli("advise", "--dataset", str(tmp_path), "--sizes", "a,b")
    assert code == 2 and "--sizes" in out
