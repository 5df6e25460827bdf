"""The loader's packing thread: writes run behind the plans, a reader waits, errors surface."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from torch_support import bytes_and_twin

from fs_support import file_in_the_way, fill, remount_read_only, tiny_tmpfs
from hotset.cachestore.shm_gc import owner_identity
from hotset.data.leftovers import host_label
from hotset.data.manifest import content_hash
from hotset.data.package_writer import PackageWriter
from hotset.engine.packages import DEFAULT_PREFIX, PackageSet, decode, package_key
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.storage.local import LocalStore
from hotset.torch.packing import PackingThread

N = 12


class GatedStore(LocalStore):
    """A local store whose reads wait for a gate: a read still waiting proves the caller
    did not block on it. ``fail`` makes reads raise instead."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.gate = threading.Event()
        self.fail = False
        self.reader_threads: set[str] = set()

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        self.reader_threads.add(threading.current_thread().name)
        if not self.gate.wait(timeout=30):
            raise TimeoutError("gate never opened")
        if self.fail:
            raise OSError("disk went away")
        return super().read_many(keys)


def _setup(tmp_path: Path) -> tuple[GatedStore, PackingThread, PackageSet, list[bytes]]:
    blobs = [bytes([i]) * (10 + i) for i in range(N)]
    keys = [f"s{i:03d}" for i in range(N)]
    for key, blob in zip(keys, blobs, strict=True):
        (tmp_path / key).write_bytes(blob)
    store = GatedStore(tmp_path)
    sizes = np.asarray([len(b) for b in blobs], dtype=np.int64)
    writer = PackageWriter(
        store,
        keys=keys,
        hashes=[content_hash(b) for b in blobs],
        sizes=sizes,
        prefix=".hotset-packages/test/",
    )
    layout = PackageSet(sizes)
    system: Any = SimpleNamespace(policy=SimpleNamespace(layout=layout))
    return store, PackingThread(system, writer), layout, blobs


def _plan(packs: list[int], reads: list[int]) -> Any:
    return _batch_plan(packs=packs, unit_reads=reads, reads=[], puts=[])


def test_a_package_is_written_behind_the_plan_that_defines_it(tmp_path: Path) -> None:
    store, thread, layout, blobs = _setup(tmp_path)
    u = layout.add([3, 1, 7])
    thread.write(_plan([u], []))  # returns while the packer's reads are still gated
    path = tmp_path / package_key(".hotset-packages/test/", u)
    assert not path.exists() and not store.gate.is_set()
    store.gate.set()
    thread.write(_plan([], [u]))  # the plan that reads it waits for the write
    assert decode(path.read_bytes()) == {3: blobs[3], 1: blobs[1], 7: blobs[7]}
    assert store.reader_threads and all(
        name.startswith("hotset-packer") for name in store.reader_threads
    )
    thread.remove()
    assert not (tmp_path / ".hotset-packages/test/").exists()


def test_a_reader_of_a_package_never_submitted_writes_it_inline(tmp_path: Path) -> None:
    store, thread, layout, blobs = _setup(tmp_path)
    store.gate.set()
    u = layout.add([5, 6])  # defined before a restart: no plan of this run named it
    thread.write(_plan([], [u]))
    path = tmp_path / package_key(".hotset-packages/test/", u)
    assert decode(path.read_bytes()) == {5: blobs[5], 6: blobs[6]}
    assert store.reader_threads == {threading.current_thread().name}
    thread.remove()


def test_a_failed_background_write_is_raised_by_the_plan_that_reads_it(tmp_path: Path) -> None:
    store, thread, layout, _ = _setup(tmp_path)
    store.fail = True
    u = layout.add([0, 2])
    thread.write(_plan([u], []))
    store.gate.set()
    with pytest.raises(OSError, match="disk went away"):
        thread.write(_plan([], [u]))
    thread.remove()


def test_a_failed_write_no_plan_reads_is_raised_by_a_later_plan(tmp_path: Path) -> None:
    store, thread, layout, _ = _setup(tmp_path)
    store.fail = True
    store.gate.set()
    u = layout.add([0, 2])
    thread.write(_plan([u], []))
    with pytest.raises(OSError, match="disk went away"):
        thread.drain()
    v = layout.add([4])
    thread.write(_plan([v], []))
    with pytest.raises(OSError, match="disk went away"):
        for _ in range(100):  # the next plan after the failure raises it
            thread.write(_plan([], []))
            threading.Event().wait(0.05)
    thread.remove()


# -- packages that cannot be written (issue #25, item 4) ---------------------------------


def _batch_plan(
    *, packs: list[int], unit_reads: list[int], reads: list[int], puts: list[int]
) -> Any:
    """A real BatchPlan (the fallback rewrites it with dataclasses.replace)."""
    from hotset.engine.plan import BatchPlan

    ids = np.asarray(reads, dtype=np.int64)
    return BatchPlan(
        epoch=1,
        index=0,
        seq=1,
        generation=0,
        requested=ids,
        served=ids,
        outcomes=np.full(len(ids), 2, dtype=np.int8),
        units=np.full(len(ids), -1, dtype=np.int64),
        reads=ids,
        unit_reads=np.asarray(unit_reads, dtype=np.int64),
        prefetch=np.zeros(0, dtype=np.int64),
        admitted=np.asarray(puts, dtype=np.int64),
        evicted=np.zeros(0, dtype=np.int64),
        deletes=np.zeros(0, dtype=np.int64),
        puts=np.asarray(puts, dtype=np.int64),
        wait_for=0,
        weights=np.ones(len(ids)),
        storage_requests=len(ids),
        storage_bytes=0,
        packs=np.asarray(packs, dtype=np.int64),
        pack_requests=0,
        pack_bytes=0,
    )


def test_a_package_that_cannot_be_written_is_read_as_its_members(tmp_path: Path) -> None:
    store, thread, layout, _ = _setup(tmp_path)
    store.gate.set()
    file_in_the_way(tmp_path / ".hotset-packages")  # every write under it: ENOTDIR
    u = layout.add([3, 1, 7])
    first = _batch_plan(packs=[u], unit_reads=[], reads=[], puts=[])
    assert thread.write(first) is first  # the write is behind the plan
    # the plan reading ``u`` puts 3 and 7 (1 was not worth admitting), and reads 5 alone
    with pytest.warns(RuntimeWarning, match=r"cannot write package .*p00000000\.pkg.*Errno"):
        got = thread.write(_batch_plan(packs=[], unit_reads=[u], reads=[5], puts=[5, 3, 7]))
    assert got.unit_reads.tolist() == [] and got.reads.tolist() == [5, 3, 7]
    # later packages are not written (each would read its members for nothing), so
    # they leave their plan's packs and the packer's counted reads
    v = layout.add([2, 4])
    defining = dataclasses.replace(
        _batch_plan(packs=[v], unit_reads=[], reads=[], puts=[]), pack_requests=2, pack_bytes=26
    )
    got = thread.write(defining)
    assert got.packs.tolist() == [] and (got.pack_requests, got.pack_bytes) == (0, 0)
    later = thread.write(_batch_plan(packs=[], unit_reads=[v], reads=[], puts=[4]))
    assert later.unit_reads.tolist() == [] and later.reads.tolist() == [4]
    thread.consumed()  # nothing to delete, and no error for the files that never were
    thread.consumed()
    assert thread.summary() == {
        "package_write_errors": 1,
        "packages_not_written": 2,
        "packages_lost": 0,
        "package_fallback_reads": 3,
        "package_delete_errors": 0,
    }
    thread.remove()


def test_a_folder_that_cannot_hold_packages_is_refused_when_the_writer_is_made(
    tmp_path: Path,
) -> None:
    system: Any = SimpleNamespace(
        policy=SimpleNamespace(layout=PackageSet(np.ones(2, dtype=np.int64)))
    )
    file_in_the_way(tmp_path / "pkgs" / ".hotset-packages")
    with pytest.raises(HotsetError, match=r"package_dir='.*pkgs'.*Errno 20\] Not a directory"):
        PackageWriter.for_policy(
            system.policy,
            LocalStore(tmp_path),
            keys=["a", "b"],
            hashes=["", ""],
            sizes=[1, 1],
            label="loader",
            out=LocalStore(tmp_path / "pkgs"),
        )


def test_the_package_folders_of_dead_runs_go_when_a_writer_is_made(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a real process, now dead: its pid names no one (or someone newer)
    pid, start, ns = owner_identity()
    host = host_label()
    dead = tmp_path / DEFAULT_PREFIX / f"loader-{host}_{child.pid}_{start}_{ns}-0123abcd"
    alive = tmp_path / DEFAULT_PREFIX / f"loader-{host}_{pid}_{start}_{ns}-4567abcd"
    other_host = tmp_path / DEFAULT_PREFIX / f"loader-elsewhere0_{child.pid}_{start}_{ns}-89abcdef"
    for folder in (dead, alive, other_host):
        folder.mkdir(parents=True)
        (folder / "p00000000.pkg").write_bytes(b"x" * 100)
    system: Any = SimpleNamespace(
        policy=SimpleNamespace(layout=PackageSet(np.ones(2, dtype=np.int64)))
    )
    writer = PackageWriter.for_policy(
        system.policy,
        LocalStore(tmp_path),
        keys=["a", "b"],
        hashes=["", ""],
        sizes=[1, 1],
        label="loader",
    )
    assert not dead.exists() and alive.exists() and other_host.exists()
    mine = tmp_path / writer.prefix
    assert mine.is_dir() and not any(mine.iterdir())  # made, probed, probe removed
    assert f"_{os.getpid()}_" in mine.name
    writer.remove()
    assert not mine.exists()


def _loss(ids: np.ndarray) -> np.ndarray:
    return ((ids * 7919) % 101) / 100.0 + 0.01


def _run_and_check(loader: Any, planner: Planner, truth: list[bytes], epochs: range) -> None:
    """Train ``epochs``: every sample byte-exact, the twin's decisions and samples."""
    for epoch in epochs:
        seen = _epoch(loader, epoch, truth)
        planner.begin(epoch)
        served: list[int] = []
        for plan in planner.plans():
            served += plan.served.tolist()
            planner.give(plan.index, plan.served, _loss(plan.served))
        planner.finish(val_accuracy=None)
        assert loader.decisions().rows() == planner.log.rows(), f"epoch {epoch}"
        assert sorted(seen) == sorted(served), f"epoch {epoch}: other samples than the twin's"


def _epoch(loader: Any, epoch: int, truth: list[bytes]) -> list[int]:
    """One epoch of training; the ids delivered, each checked against its file's bytes."""
    loader.set_epoch(epoch)
    seen: list[int] = []
    for x, _y, ids, _w in loader:
        for blob, sid in zip(x, ids.tolist(), strict=True):
            assert blob == truth[sid], f"epoch {epoch}: id {sid} bytes differ"
        seen += ids.tolist()
        loader.update(ids, _loss(ids.numpy()))
    return seen


EPOCHS, BATCH, SEED = 4, 16, 2
OPTIONS = {"warm_up": 1}  # selective epochs (and packages) from epoch 1


def _icache(dataset_dir: Path, workers: int, package_dir: Path) -> tuple[Any, Planner, list[bytes]]:
    import hotset

    data, truth, capacity, twin = bytes_and_twin(
        dataset_dir, "icache", frac=0.3, seed=SEED, **OPTIONS
    )
    loader = hotset.loader(
        data,
        system="icache",
        system_options=OPTIONS,
        cache=capacity,
        batch_size=BATCH,
        num_workers=workers,
        seed=SEED,
        package_dir=package_dir,
    )
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    planner = Planner(twin, n=len(truth), batch_size=BATCH, lag=loader.lag, sizes=sizes)
    return loader, planner, truth


def _check_fell_back(loader: Any, reason: str, record: Any) -> None:
    summary = loader.policy_summary()
    assert summary["package_write_errors"] >= 1, summary
    assert summary["packages_not_written"] >= summary["package_write_errors"]
    assert summary["package_fallback_reads"] > 0, summary
    rows = loader.report()
    assert sum(r["pack_reads"] for r in rows) >= 0 and sum(r["substitutions"] for r in rows) > 0
    warned = [w for w in record if "cannot write package" in str(w.message)]
    assert len(warned) == 1, [str(w.message) for w in record]  # once, with path and reason
    assert reason in str(warned[0].message) and ".hotset-packages" in str(warned[0].message)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_run_whose_package_folder_is_taken_away_trains_on(
    dataset_dir: Path, tmp_path: Path, workers: int
) -> None:
    pkg_dir = tmp_path / "pkgs"
    loader, planner, truth = _icache(dataset_dir, workers, pkg_dir)
    with loader:
        file_in_the_way(pkg_dir / ".hotset-packages")  # mid-run: ENOTDIR from now on
        with pytest.warns(RuntimeWarning) as record:
            _run_and_check(loader, planner, truth, range(EPOCHS))
        _check_fell_back(loader, "Not a directory", record)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_package_dir_on_a_full_tmpfs_trains_on(
    dataset_dir: Path, tmp_path: Path, workers: int
) -> None:
    with tiny_tmpfs(tmp_path / "mnt", "256k") as mnt:
        loader, planner, truth = _icache(dataset_dir, workers, mnt)
        with loader:
            assert fill(mnt) > 0  # full after the loader was made: ENOSPC from now on
            with pytest.warns(RuntimeWarning) as record:
                _run_and_check(loader, planner, truth, range(EPOCHS))
            _check_fell_back(loader, "No space left on device", record)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_package_dir_turned_read_only_trains_on(
    dataset_dir: Path, tmp_path: Path, workers: int
) -> None:
    with tiny_tmpfs(tmp_path / "mnt", "1m") as mnt:
        loader, planner, truth = _icache(dataset_dir, workers, mnt)
        with loader:
            _run_and_check(loader, planner, truth, range(2))  # packages written and read
            assert loader.policy_summary().get("package_write_errors", 0) == 0
            remount_read_only(mnt)  # EROFS from now on, for writes and deletes
            with pytest.warns(RuntimeWarning) as record:
                _run_and_check(loader, planner, truth, range(2, EPOCHS))
            _check_fell_back(loader, "Read-only file system", record)


def test_an_unwritable_package_dir_is_refused_when_the_loader_is_made(
    dataset_dir: Path, tmp_path: Path
) -> None:
    import hotset

    file_in_the_way(tmp_path / "pkgs" / ".hotset-packages")
    with pytest.raises(HotsetError, match=r"package_dir=.*pkgs.*Not a directory"):
        hotset.loader(dataset_dir, system="icache", batch_size=8, package_dir=tmp_path / "pkgs")
    with tiny_tmpfs(tmp_path / "mnt") as mnt:
        remount_read_only(mnt)
        with pytest.raises(HotsetError, match=r"package_dir=.*mnt.*Read-only file system"):
            hotset.loader(dataset_dir, system="impact", batch_size=8, package_dir=mnt)
        with pytest.raises(HotsetError, match=r"package_dir=.*mnt/new.*Read-only file system"):
            hotset.loader(dataset_dir, system="impact", batch_size=8, package_dir=mnt / "new")


def test_a_read_only_data_store_is_refused_when_the_loader_is_made(tmp_path: Path) -> None:
    import hotset
    from hotset.data import SynthConfig, make_synth

    with tiny_tmpfs(tmp_path / "mnt", "2m") as mnt:
        make_synth(mnt / "ds", SynthConfig(n=60, image_size=8, classes=4, seed=3), workers=1)
        remount_read_only(mnt)
        with pytest.raises(HotsetError, match=r"data store.*Read-only file system.*package_dir="):
            hotset.loader(mnt / "ds", system="icache", batch_size=8)
        loader = hotset.loader(
            mnt / "ds", system="icache", batch_size=8, package_dir=tmp_path / "pkgs"
        )
        loader.close()  # the way out the message names works


def test_packages_of_a_data_set_without_hashes_are_checked_by_size(tmp_path: Path) -> None:
    """A loader with verify=False (a data set from ``from_dataset(sizes=...)`` has no
    hashes) writes iCACHE's packages checking sizes only; it stopped with an
    IntegrityError at the first package, comparing bytes with a placeholder hash."""
    from hotset.bench.statesize import state_bytes

    assert (
        state_bytes("icache", 4000, full_epochs=1, batch_size=32, package_dir=tmp_path / "pk") > 0
    )
