"""summary() and report() say the same: the four kinds of serving, storage requests and bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_support import run_epoch

import hotset
from hotset.torch.report import _SUMMARY_COLUMNS
from packed_support import packed_synth

KINDS = ("exact_hits", "substitutions", "fetched_ahead", "storage_reads")


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(tmp_path_factory.mktemp("report") / "ds", n=320, seed=7, chunk_size=16)


def _summary_rows(text: str) -> list[dict[str, str]]:
    """The summary's epoch lines, cell by column key (cells never hold spaces)."""
    keys = [key for _, key, _ in _SUMMARY_COLUMNS]
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["epoch", "samples"])
    return [dict(zip(keys, line.split(), strict=True)) for line in lines[start + 1 :]]


@pytest.mark.parametrize("system", ["quiver", "scout", "brand", "shade"])
def test_summary_and_report_agree_on_storage_requests_and_bytes(packed: Path, system: str) -> None:
    data = hotset.open_dataset(packed, decode="bytes")
    with hotset.loader(data, system=system, cache=0.2, batch_size=32, num_workers=2) as ld:
        for epoch in range(3):
            run_epoch(ld, epoch)
        rows, text = ld.report(), ld.summary()
    shown = _summary_rows(text)
    assert len(shown) == len(rows) == 3
    for row, cells in zip(rows, shown, strict=True):
        assert sum(row[k] for k in KINDS) == row["requests"] == int(cells["requests"])
        for key in (*KINDS, "storage_requests"):
            assert int(cells[key]) == row[key], (system, key)
        assert float(cells["storage_mb"]) == pytest.approx(row["storage_bytes"] / 1e6, abs=0.05)
        assert row["storage_requests"] > 0 and row["storage_bytes"] > 0
    later = rows[1:]
    if system in ("quiver", "scout", "brand"):  # they read ahead: the store was asked
        assert sum(r["fetched_ahead"] + r["substitutions"] for r in later) > 0
    # every byte the epochs after the first trained came from somewhere the report names
    assert all(r["unique_ids_trained"] > 0 for r in rows)
