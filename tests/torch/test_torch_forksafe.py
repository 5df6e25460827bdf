"""DataLoader workers are not forked where CPython's fork can hang them (gh-112275)."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from hotset.torch.forksafe import fork_can_deadlock, start_method_name, worker_start_method

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    ("version", "hangs"),
    [
        ((3, 11, 0), True),
        ((3, 11, 7), True),
        ((3, 11, 9), True),
        ((3, 11, 10), False),
        ((3, 12, 0), False),
        ((3, 13, 1), False),
    ],
)
def test_the_pythons_whose_fork_can_hang(version: tuple[int, int, int], hangs: bool) -> None:
    assert fork_can_deadlock(version) is hangs


def test_start_method_names() -> None:
    assert start_method_name("spawn") == "spawn"
    assert start_method_name(multiprocessing.get_context("forkserver")) == "forkserver"
    assert start_method_name(None) == (
        multiprocessing.get_start_method(allow_none=True)
        or multiprocessing.get_all_start_methods()[0]
    )


def test_without_a_process_group_nothing_changes() -> None:
    """This pytest process holds no process group: fork stays (and so does any choice)."""
    assert worker_start_method(None, num_workers=2) == (None, None)
    assert worker_start_method("spawn", num_workers=2) == ("spawn", None)
    assert worker_start_method(None, num_workers=0) == (None, None)


def _job(dataset_dir: Path, tmp_path: Path, asked: str) -> dict[str, object]:
    out = tmp_path / f"{asked}.json"
    proc = subprocess.run(
        [sys.executable, str(HERE / "forksafe_job.py"), str(dataset_dir), str(out), asked],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(out.read_text()))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is Linux's default")
def test_in_a_process_group_workers_start_from_a_fork_server_where_fork_can_hang(
    dataset_dir: Path, tmp_path: Path
) -> None:
    record = _job(dataset_dir, tmp_path, "default")
    warned = record["warnings"]
    assert isinstance(warned, list)
    if fork_can_deadlock():
        assert record["context"] == "forkserver"
        assert len(warned) == 1 and "gh-112275" in warned[0] and "'fork'" in warned[0]
    else:
        assert record["context"] is None and warned == []
    assert record["served"] == [list(range(200))] * 2  # every sample, each epoch


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is Linux's default")
def test_an_explicit_fork_is_kept_in_a_process_group(dataset_dir: Path, tmp_path: Path) -> None:
    record = _job(dataset_dir, tmp_path, "fork")
    assert record["context"] == "fork" and record["warnings"] == []
    assert record["served"] == [list(range(200))] * 2
