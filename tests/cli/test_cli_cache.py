"""``hotset cache ls/gc/rm``: against a scratch directory with known owners, and /dev/shm.

The scratch directory (``--dir``) holds files named and laid out like segments
whose owners are this process (alive), an exited child (dead), this pid with
another start time (a reused pid: dead), nobody recorded (old names: unknown),
plus a file that is not hotset's; so every state is exercised without racing
the other tests that share /dev/shm.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import run_cli
from hotset.cachestore.shm import SharedMemoryCache
from hotset.cachestore.shm_gc import owner_identity
from leftovers_support import (
    blocked,
    dead_pid,
    fifo_sample,
    kill,
    start_loader,
    start_pack,
    wait_for_leftover,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


@pytest.fixture
def shm_dir(tmp_path: Path) -> dict[str, Path]:
    pid, start, ns = owner_identity()
    dead = dead_pid()
    files = {
        "alive": tmp_path / f"hotset_{pid}_{start}_{ns}_aaaaaaaaaaaa",
        "dead": tmp_path / f"hotset_{dead}_{start}_{ns}_bbbbbbbbbbbb",
        "reused": tmp_path / f"hotset_{pid}_{start + 7}_{ns}_cccccccccccc",
        "unknown": tmp_path / "hotset_0123456789ab",
        "foreign": tmp_path / "someone_elses_segment",
        # Named by the caller, owner in the header only: a dead owner there.
        "custom_dead": tmp_path / "my_cache",
    }
    for i, path in enumerate(files.values()):
        path.write_bytes(bytes(1000 * (i + 1)))
    header = bytearray(128)
    header[:8] = b"HOTSHM01"
    struct.pack_into("<3Q", header, 80, dead, 0, ns)
    files["custom_dead"].write_bytes(bytes(header) + bytes(500))
    return files


def _run(*args: str) -> tuple[int, str]:
    return run_cli("cache", *args)


def test_ls_shows_size_owner_and_state(shm_dir: dict[str, Path]) -> None:
    root = str(shm_dir["alive"].parent)
    code, out = _run("ls", "--dir", root, "--json")
    assert code == 0, out
    rows = {row["name"]: row for row in json.loads(out)}
    assert set(rows) == {shm_dir[k].name for k in ("alive", "dead", "reused", "unknown")}
    assert rows[shm_dir["alive"].name]["state"] == "alive"
    assert rows[shm_dir["alive"].name]["owner_pid"] == os.getpid()
    assert rows[shm_dir["alive"].name]["size_bytes"] == 1000
    assert rows[shm_dir["dead"].name]["state"] == "dead"
    assert rows[shm_dir["reused"].name]["state"] == "dead"
    assert "pid reused" in rows[shm_dir["reused"].name]["reason"]
    assert rows[shm_dir["unknown"].name]["state"] == "unknown"
    code, table = _run("ls", "--dir", root)
    assert code == 0 and "4 segments" in table and str(os.getpid()) in table


def test_gc_removes_only_dead_owners_and_prints_bytes_freed(shm_dir: dict[str, Path]) -> None:
    root = str(shm_dir["alive"].parent)
    code, out = _run("gc", "--dir", root)
    assert code == 0, out
    assert "freed 5000 bytes" in out  # dead (2000) + reused (3000)
    assert not shm_dir["dead"].exists() and not shm_dir["reused"].exists()
    for kept in ("alive", "unknown", "foreign", "custom_dead"):
        assert shm_dir[kept].exists(), kept
    code, out = _run("gc", "--dir", root)
    assert code == 0 and "freed 0 bytes" in out


def test_rm_refuses_live_and_unknown_owners_unless_forced(shm_dir: dict[str, Path]) -> None:
    root = str(shm_dir["alive"].parent)
    for key in ("alive", "unknown"):
        code, out = _run("rm", shm_dir[key].name, "--dir", root)
        assert code == 2 and "--force" in out and shm_dir[key].exists()
        code, out = _run("rm", shm_dir[key].name, "--dir", root, "--force")
        assert code == 0 and "removed" in out and not shm_dir[key].exists()
    code, out = _run("rm", shm_dir["dead"].name, "--dir", root)
    assert code == 0 and not shm_dir["dead"].exists()
    # Caller-named segment: recognised by its header magic, owner read from the header.
    code, out = _run("rm", "my_cache", "--dir", root)
    assert code == 0 and "owner dead" in out and not shm_dir["custom_dead"].exists()


def test_rm_never_touches_files_that_are_not_hotset_segments(shm_dir: dict[str, Path]) -> None:
    root = str(shm_dir["alive"].parent)
    for name in ("someone_elses_segment", "../x", "missing"):
        code, out = _run("rm", name, "--dir", root, "--force")
        assert code == 2, out
    assert shm_dir["foreign"].exists()


def test_refusal_is_one_line_on_stderr_and_exit_2() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "from hotset.cli import main; main()", "cache", "rm", "hotset_x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("hotset: error:") and out.stderr.count("\n") == 1


def test_ls_sees_a_live_cache_in_dev_shm() -> None:
    with SharedMemoryCache(10_000, n_slots=8) as cache:
        code, out = _run("ls", "--json")
        assert code == 0, out
        rows = {row["name"]: row for row in json.loads(out)}
        assert rows[cache.name]["state"] == "alive"
        assert rows[cache.name]["owner_pid"] == os.getpid()
        code, out = _run("rm", cache.name)
        assert code == 2 and "--force" in out
        assert os.path.exists(f"/dev/shm/{cache.name}")


def test_help_says_redis_is_out_of_scope() -> None:
    code, out = _run("--help")
    assert code == 0 and "Redis" in out


# -- leftovers in a data directory (issue #25, item 9) ----------------------------------


def test_gc_data_removes_what_killed_jobs_left_and_keeps_live_owners(tmp_path: Path) -> None:
    import hotset
    from hotset.data import SynthConfig, make_synth

    ds = tmp_path / "ds"
    make_synth(ds, SynthConfig(n=200, image_size=8, classes=4, seed=3), workers=1)
    older_pkg = ds / ".hotset-packages" / "loader-4242-0123abcd"  # an older hotset's
    older_pkg.mkdir(parents=True)
    (older_pkg / "p00000000.pkg").write_bytes(b"x" * 10)
    # live owners: this process's loader (its package folder) and a pack in progress
    live_loader = hotset.loader(ds, system="icache", batch_size=8, cache="30%")
    assert live_loader._parts.packer is not None
    live_pkg = ds / live_loader._parts.packer.prefix
    with fifo_sample(ds, 13) as fifo:
        live_pack = start_pack(ds, "--chunk-size", "4")
        live_held = blocked(fifo, live_pack)
    # then what killed jobs leave (made after the live ones, which would remove them)
    killed_loader = start_loader(ds)  # an iCACHE run, killed once it wrote packages
    dead_pkg = Path(wait_for_leftover(ds, killed_loader, "packages").path)
    kill(killed_loader)
    assert any(dead_pkg.glob("*.pkg"))
    with fifo_sample(ds, 13) as fifo:  # `hotset data pack` killed mid-pack
        killed_pack = start_pack(ds, "--chunk-size", "4")
        held = blocked(fifo, killed_pack)
        dead_tmp = Path(wait_for_leftover(ds, killed_pack, "chunks").path)
        kill(killed_pack)
        os.close(held)
    try:
        live_tmp = Path(wait_for_leftover(ds, live_pack, "chunks").path)
        code, out = _run("ls", "--data", str(ds), "--json")
        assert code == 0, out
        states = {row["path"]: row["state"] for row in json.loads(out)}
        assert states == {
            str(dead_pkg): "dead",
            str(dead_tmp): "dead",
            str(live_pkg): "alive",
            str(live_tmp): "alive",
            str(older_pkg): "unknown",
        }
        code, table = _run("ls", "--data", str(ds))
        assert code == 0 and "5 folders" in table and str(killed_loader.pid) in table
        code, out = _run("gc", "--data", str(ds))
        assert code == 0, out
        assert "in 2 folders" in out and str(dead_pkg) in out and str(dead_tmp) in out
        assert not dead_pkg.exists() and not dead_tmp.exists()
        assert live_pkg.is_dir() and live_tmp.is_dir() and older_pkg.is_dir()
        code, out = _run("gc", "--data", str(ds), "--unknown")  # an older hotset's too
        assert code == 0 and "in 1 folders" in out and not older_pkg.exists()
        assert live_pkg.is_dir() and live_tmp.is_dir()
    finally:
        kill(live_pack)
        os.close(live_held)
        live_loader.close()
    assert not live_pkg.exists()  # the loader removed its own at close
    code, out = _run("gc", "--data", str(ds))
    assert code == 0 and "in 1 folders" in out and not live_tmp.exists()
    code, out = _run("ls", "--data", str(ds))
    assert code == 0 and "no hotset leftovers" in out


def test_data_and_redis_are_one_target_at_a_time(tmp_path: Path) -> None:
    code, out = _run("gc", "--data", str(tmp_path), "--redis", "redis://127.0.0.1:1/0")
    assert code == 2 and "not both" in out
    code, out = _run("gc", "--data", str(tmp_path), "--shared-idle", "5")
    assert code == 2 and "--shared-idle needs --redis" in out
