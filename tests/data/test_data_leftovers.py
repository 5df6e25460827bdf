"""Which folders in a data directory are hotset's leftovers, whose they are, and which go.

Owners are real processes: this one (alive), an exited child (dead), this pid
with another start time (a reused pid: dead); plus an owner on another host and
folders an older hotset named without an owner (both unknown: kept unless asked).
Folders hotset did not name are never listed, whatever they hold.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hotset.cachestore.shm_gc import owner_identity
from hotset.data.leftovers import host_label, owned_tempdir, owner_tag, reclaim, scan
from leftovers_support import dead_pid

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    pid, start, ns = owner_identity()
    host, dead = host_label(), dead_pid()
    other = "otherhost" if host != "otherhost" else "otherhost2"
    pkgs = tmp_path / ".hotset-packages"
    made = {
        "alive_tmp": owned_tempdir(tmp_path, prefix=".chunks.", suffix=".tmp"),
        "dead_tmp": tmp_path / f".chunks.{host}_{dead}_{start}_{ns}.ab_cd123.tmp",
        "reused_old": tmp_path / f".chunks.{host}_{pid}_{start + 7}_{ns}.ab_cd124.old",
        "older_tmp": tmp_path / ".chunks.k2j4h5g6.tmp",
        "alive_pkg": pkgs / f"loader-{owner_tag()}-0123abcd",
        "dead_pkg": pkgs / f"sim-{host}_{dead}_{start}_{ns}-4567abcd",
        "other_host_pkg": pkgs / f"loader-{other}_{dead}_{start}_{ns}-89abcdef",
        "older_pkg": pkgs / "loader-4242-0123abcd",
        "foreign": tmp_path / ".chunks-mine",
        "foreign_pkg": pkgs / "test",
        "chunks": tmp_path / "chunks",
    }
    for i, folder in enumerate(made.values()):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "f.bin").write_bytes(b"x" * (100 * (i + 1)))
    return made


def test_scan_names_each_leftover_its_owner_and_its_state(folders: dict[str, Path]) -> None:
    got = {Path(item.path): item for item in scan(folders["chunks"].parent)}
    want = {
        "alive_tmp": "alive",
        "dead_tmp": "dead",
        "reused_old": "dead",
        "older_tmp": "unknown",
        "alive_pkg": "alive",
        "dead_pkg": "dead",
        "other_host_pkg": "unknown",
        "older_pkg": "unknown",
    }
    assert {path: item.state for path, item in got.items()} == {
        folders[k]: v for k, v in want.items()
    }
    assert got[folders["alive_tmp"]].owner_pid == owner_identity()[0]
    assert got[folders["dead_tmp"]].size_bytes == 200 and got[folders["dead_tmp"]].kind == "chunks"
    assert "pid reused" in got[folders["reused_old"]].reason
    assert "no owner recorded" in got[folders["older_pkg"]].reason
    assert "owner on host 'otherhost" in got[folders["other_host_pkg"]].reason
    assert got[folders["dead_pkg"]].kind == "packages"


def test_reclaim_removes_dead_owners_then_unrecorded_ones_when_asked(
    folders: dict[str, Path],
) -> None:
    root = folders["chunks"].parent
    gone = {Path(item.path) for item in reclaim(root)}
    assert gone == {folders[k] for k in ("dead_tmp", "reused_old", "dead_pkg")}
    assert all(not p.exists() for p in gone)
    gone = {Path(item.path) for item in reclaim(root, unknown=True)}
    assert gone == {folders["older_tmp"], folders["older_pkg"]}
    kept = ("alive_tmp", "alive_pkg", "other_host_pkg", "foreign", "foreign_pkg", "chunks")
    assert all(folders[k].is_dir() for k in kept)
