"""A package file deleted after it was written: iCACHE and ImPACT go on, byte-exact.

Before, the fallback to single reads covered only a package that could not be
*written*; one deleted afterwards (a clean-up job, another process's ``rm``) stopped
the run at its read in 6 of 6 runs. Now each plan carries its packages' members and
a worker that finds a package gone, truncated or overwritten reads them alone from
the data store. Here every package file is deleted (or truncated) between batches,
while the loader runs with real DataLoader workers: each run must deliver exactly
the batches of an untouched twin (same ids, same bytes, same decisions) and count
what it re-read (``packages_lost``, ``package_fallback_reads``).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import hotset

EPOCHS, BATCH, SEED = 4, 16, 2


def _loss(ids: np.ndarray) -> np.ndarray:
    return ((ids * 7919) % 101) / 100.0 + 0.01


def _loader(dataset_dir: Path, system: str, workers: int, package_dir: Path) -> Any:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    return hotset.loader(
        data,
        system=system,
        system_options={"warm_up": 1} if system == "icache" else None,
        cache=0.3,
        batch_size=BATCH,
        num_workers=workers,
        seed=SEED,
        package_dir=package_dir,
    )


def _delete(folder: Path) -> int:
    gone = 0
    for f in folder.rglob("*.pkg"):
        f.unlink(missing_ok=True)
        gone += 1
    return gone


def _truncate(folder: Path) -> int:
    cut = 0
    for f in folder.rglob("*.pkg"):
        try:
            f.write_bytes(f.read_bytes()[:-1])
        except FileNotFoundError:
            continue
        cut += 1
    return cut


FAULTS = {"deleted": _delete, "truncated": _truncate}


def _run(loader: Any, fault: Any, folder: Path) -> tuple[list[Any], int]:
    """Every epoch's batches (ids, bytes); ``fault`` applied to the package folder
    before each batch is asked for (so packages written ahead are gone when read)."""
    out, hit = [], 0
    for epoch in range(EPOCHS):
        loader.set_epoch(epoch)
        it = iter(loader)
        while True:
            if fault is not None:
                hit += fault(folder)
            try:
                x, _y, ids, _w = next(it)
            except StopIteration:
                break
            out.append((epoch, ids.tolist(), list(x)))
            loader.update(ids, torch.from_numpy(_loss(ids.numpy())))
    return out, hit


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("system", ["icache", "impact"])
def test_a_package_lost_after_it_was_written_is_read_from_its_members(
    dataset_dir: Path, tmp_path: Path, system: str, workers: int, fault: str
) -> None:
    with _loader(dataset_dir, system, workers, tmp_path / "twin") as twin:
        want, _ = _run(twin, None, tmp_path / "twin")
        want_rows = twin.decisions().rows()
        assert "packages_lost" not in twin.policy_summary()
    with (
        _loader(dataset_dir, system, workers, tmp_path / "pk") as loader,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        got, hit = _run(loader, FAULTS[fault], tmp_path / "pk")
        summary = loader.policy_summary()
        rows = loader.decisions().rows()
    assert hit > 0, "no package file was there to lose: the fault tested nothing"
    assert got == want  # the same batches: ids and bytes
    assert rows == want_rows  # the same decisions
    assert summary["packages_lost"] > 0 and summary["package_fallback_reads"] > 0, summary
    assert summary["package_write_errors"] == 0
    assert any("package file was gone or unreadable" in str(w.message) for w in caught)
