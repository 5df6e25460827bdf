"""The loader's packing thread: writes run behind the plans, a reader waits, errors surface."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from hotset.data.manifest import content_hash
from hotset.data.package_writer import PackageWriter
from hotset.engine.packages import PackageSet, decode, package_key
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
    return SimpleNamespace(
        packs=np.asarray(packs, dtype=np.int64), unit_reads=np.asarray(reads, dtype=np.int64)
    )


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
