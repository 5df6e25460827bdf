"""A cache /dev/shm cannot hold is a HotsetError when the loader is built, not a bus error.

The loader tests run in a mount namespace of their own whose /dev/shm is a 64 MiB
tmpfs (Docker's default), as a container without ``--shm-size`` has it; the
function's own test mounts a small tmpfs on a temporary directory. Both need root
(mounting a tmpfs) and ``unshare``; where either is missing they are skipped with
the reason, never counted as passing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hotset.cachestore.shm_room import check_room, free_bytes
from hotset.data import SynthConfig, make_synth
from hotset.errors import HotsetError
from process_support import run_job

HERE = Path(__file__).parent
MIB = 2**20


def _can_mount() -> str | None:
    """Why a tmpfs cannot be mounted here, or None."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         "mount -t tmpfs -o size=1m tmpfs /dev/shm"],
        capture_output=True, text=True,
    )  # fmt: skip
    return None if probe.returncode == 0 else f"cannot mount a tmpfs: {probe.stderr.strip()}"


WHY = _can_mount()
needs_mount = pytest.mark.skipif(WHY is not None, reason=WHY or "")


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> object:
    where = tmp_path / "shm"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@needs_mount
def test_room_is_read_from_the_file_system_and_a_segment_already_there_counts(
    small_tmpfs: Path,
) -> None:
    shm = str(small_tmpfs)
    free = free_bytes(shm)
    assert free == 8 * MIB
    check_room(7 * MIB, capacity=5 * MIB, shm_dir=shm)
    with pytest.raises(HotsetError) as err:
        check_room(9 * MIB, capacity=7 * MIB, shm_dir=shm)
    text = str(err.value)
    assert "cache=7.0 MiB" in text and f"{8 * MIB} bytes) free" in text
    assert "--shm-size" in text and "redis://" in text
    # a node's segment another rank made: only what it still lacks must fit
    (small_tmpfs / "hotset_seg").write_bytes(b"\1" * (6 * MIB))
    check_room(7 * MIB, capacity=5 * MIB, name="hotset_seg", shm_dir=shm)
    with pytest.raises(HotsetError):
        check_room(7 * MIB, capacity=5 * MIB, shm_dir=shm)


def test_no_such_file_system_checks_nothing(tmp_path: Path) -> None:
    assert free_bytes(str(tmp_path / "absent")) is None
    check_room(10**18, capacity=10**18, shm_dir=str(tmp_path / "absent"))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("room") / "ds"
    make_synth(path, SynthConfig(n=96, image_size=8, seed=0), workers=1)
    return path


def _in_small_shm(argv: list[str]) -> list[str]:
    """``argv`` run where /dev/shm is a 64 MiB tmpfs (a mount namespace of its own)."""
    inner = " ".join(f"'{a}'" for a in argv)
    return [
        "unshare", "--mount", "--propagation", "private", "sh", "-c",
        f"mount -t tmpfs -o size=64m tmpfs /dev/shm && exec {inner}",
    ]  # fmt: skip


@needs_mount
@pytest.mark.parametrize("workers", [0, 2])
def test_a_cache_over_dev_shm_fails_at_build_and_leaves_nothing(
    dataset: Path, workers: int
) -> None:
    job = [sys.executable, str(HERE / "shm_room_job.py"), str(dataset), str(workers)]
    out, _ = run_job(_in_small_shm([*job, "200mb"]))
    assert "HOTSET cache=190.7 MiB" in out and f"has 64.0 MiB ({64 * MIB} bytes) free" in out
    assert "LEFT []" in out
    out, _ = run_job(_in_small_shm([*job, "2mb"]))  # one that fits still runs
    assert "OK 96" in out and "LEFT []" in out


@needs_mount
@pytest.mark.slow
def test_every_rank_of_a_node_cache_refuses_it(dataset: Path) -> None:
    """Two local ranks share one node cache: both refuse it at once (the one that would
    join does not wait for a segment its creator never makes)."""
    run = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    out, err = run_job(
        _in_small_shm([*run, str(HERE / "shm_room_job.py"), str(dataset), "0", "200mb"]),
        timeout_s=120,
    )
    assert out.count("HOTSET cache=190.7 MiB") == 2, (out, err)
    assert out.count("LEFT []") == 2
