"""A chunk system on an unpacked data set packs it itself, once (issue #27, item 2), and a
chunk system on label-homogeneous chunks warns with the command that re-packs them."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch_support import epoch_once_byte_exact

import hotset
from fs_support import file_in_the_way
from hotset.data import Manifest, SynthConfig, make_synth, pack_dataset
from hotset.data.chunks import ChunkLayout
from hotset.errors import HotsetError, IntegrityError, StorageError
from hotset.storage import LocalStore
from packed_support import label_sorted_synth
from store_support import FaultyStore

HERE = Path(__file__).resolve().parent


def _unpacked(path: Path, n: int = 96, seed: int = 7) -> Path:
    make_synth(path, SynthConfig(n=n, image_size=8, classes=4, seed=seed), workers=1)
    return path


def _stat(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_ino, info.st_mtime_ns


def _pack_files(pack: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(pack)): _stat(p) for p in sorted(pack.rglob("*"))}


@pytest.mark.parametrize("workers", [0, 2])
def test_brand_on_an_unpacked_set_packs_it_once_and_trains_every_sample_each_epoch(
    tmp_path: Path, workers: int, capfd: pytest.CaptureFixture[str]
) -> None:
    ds = _unpacked(tmp_path / "ds")
    before = sorted(p.name for p in ds.iterdir())
    packs = tmp_path / "packs"
    data = hotset.open_dataset(ds, decode="bytes")
    assert data.layout is None
    truth = [data[i][0] for i in range(len(data))]
    with hotset.loader(
        data, system="brand", cache=0.25, batch_size=8, num_workers=workers, pack_dir=packs
    ) as loader:
        for epoch in range(2):
            epoch_once_byte_exact(loader, epoch, truth)
        assert loader.report()[-1]["unit_reads"] > 0  # chunks were read, one request each
    pack = packs / data.manifest.identity()
    assert "hotset: packing" in capfd.readouterr().err  # progress on stderr
    layout = ChunkLayout.load(pack)
    assert layout.shuffle == "seed 0" and layout.chunk_size == 64
    assert layout.manifest_identity == data.manifest.identity()
    assert sorted(p.name for p in ds.iterdir()) == before  # the data set is left alone
    files = _pack_files(pack)

    # a second loader (another run) finds the pack: nothing is packed or written again
    again = hotset.open_dataset(ds, decode="bytes")
    with hotset.loader(again, system="brand", cache=0.25, batch_size=8, pack_dir=packs) as loader:
        epoch_once_byte_exact(loader, 0, truth)
    assert "hotset: packing" not in capfd.readouterr().err
    assert _pack_files(pack) == files
    assert sorted(p.name for p in packs.iterdir() if not p.name.startswith(".")) == [pack.name]


def test_the_default_pack_dir_is_under_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _unpacked(tmp_path / "ds", n=40)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with hotset.loader(ds, system="brand", cache=0.3, batch_size=8) as loader:
        ids = [i for _, _, batch, _ in loader for i in batch.tolist()]
    assert sorted(ids) == list(range(40))
    identity = Manifest.load(ds).identity()
    assert ChunkLayout.exists(tmp_path / "xdg" / "hotset" / "packs" / identity)


def test_an_unwritable_pack_dir_is_refused_naming_it_and_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder under a regular file cannot be made, even by root (chmod would not stop it)."""
    ds = _unpacked(tmp_path / "ds", n=24)
    blocker = tmp_path / "blocker"
    file_in_the_way(blocker)
    wanted = blocker / "packs"
    with pytest.raises(HotsetError) as info:
        hotset.loader(ds, system="brand", cache=0.3, batch_size=8, pack_dir=wanted)
    text = str(info.value)
    assert f"pack_dir={str(wanted)!r}" in text and "system 'brand' reads whole chunks" in text
    assert f"hotset data pack {ds}" in text  # the other way out

    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # the default, unwritable
    with pytest.raises(HotsetError, match=r"pack_dir \(left out: .*blocker/hotset/packs"):
        hotset.loader(ds, system="brand", cache=0.3, batch_size=8)
    assert not ChunkLayout.exists(ds)


def test_a_packed_set_is_read_as_it_is_and_pack_dir_is_left_alone(tmp_path: Path) -> None:
    """Policy decisions on data packed in place never change: its own layout is used."""
    ds = _unpacked(tmp_path / "ds", n=48)
    own = pack_dataset(ds, chunk_size=8, shuffle_seed=3)
    packs = tmp_path / "packs"
    with hotset.loader(ds, system="brand", cache=0.3, batch_size=8, pack_dir=packs) as loader:
        assert loader.system.policy.layout == own
        next(iter(loader))
    assert not packs.exists()


def test_quiver_reads_an_unpacked_set_a_sample_at_a_time_unless_given_pack_dir(
    tmp_path: Path,
) -> None:
    ds = _unpacked(tmp_path / "ds", n=64)
    with hotset.loader(ds, system="quiver", cache=0.3, batch_size=8) as loader:
        assert loader.system.policy.layout is None  # as before: one sample per request
        next(iter(loader))
    packs = tmp_path / "packs"
    with hotset.loader(ds, system="quiver", cache=0.3, batch_size=8, pack_dir=packs) as loader:
        assert loader.system.policy.layout is not None
        ids = [i for _, _, batch, _ in loader for i in batch.tolist()]
    assert sorted(ids) == list(range(64))
    assert ChunkLayout.exists(packs / Manifest.load(ds).identity())


def test_pack_dir_with_a_system_that_reads_no_chunks_is_refused(tmp_path: Path) -> None:
    ds = _unpacked(tmp_path / "ds", n=16)
    with pytest.raises(HotsetError, match=r"pack_dir='.*': system 'lru' reads no chunks"):
        hotset.loader(ds, system="lru", cache=0.3, batch_size=8, pack_dir=tmp_path / "p")
    with pytest.raises(HotsetError, match=r"pack_dir must be a directory path, got 3"):
        hotset.loader(ds, system="brand", cache=0.3, batch_size=8, pack_dir=3)


def test_a_users_dataset_is_packed_too(tmp_path: Path) -> None:
    """A wrapped map-style Dataset (hashed when measured) is packed through its own reads."""
    items = [(torch.full((3,), float(i)), i % 3) for i in range(40)]
    data = hotset.from_dataset(items)
    packs = tmp_path / "packs"
    with hotset.loader(data, system="brand", cache=0.3, batch_size=8, pack_dir=packs) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            seen = []
            for x, y, ids, _ in loader:
                assert torch.equal(x[:, 0], ids.to(x.dtype)) and torch.equal(y, ids % 3)
                seen += ids.tolist()
            assert sorted(seen) == list(range(40))
    unhashed = hotset.from_dataset(items, sizes=[len(items)] * 40, labels=[y for _, y in items])
    with pytest.raises(HotsetError, match="loader cannot pack it"):
        hotset.loader(unhashed, system="brand", verify=False, pack_dir=packs)


def test_a_damaged_pack_is_caught_and_the_error_says_to_delete_it(tmp_path: Path) -> None:
    ds = _unpacked(tmp_path / "ds", n=40)
    packs = tmp_path / "packs"
    with hotset.loader(ds, system="brand", cache=0.3, batch_size=8, pack_dir=packs) as loader:
        next(iter(loader))
    pack = packs / Manifest.load(ds).identity()
    chunk = pack / "chunks" / "c000000.bin"
    blob = bytearray(chunk.read_bytes())
    blob[-1] ^= 1  # same size, other bytes
    chunk.write_bytes(bytes(blob))
    with (
        pytest.raises(IntegrityError, match=rf"delete '{pack}'"),
        hotset.loader(ds, system="brand", cache=0.3, batch_size=8, pack_dir=packs) as loader,
    ):
        for _ in loader:
            pass


def test_processes_packing_the_same_set_at_once_pack_it_once(tmp_path: Path) -> None:
    """The ranks of a job on one machine: one packs, the others wait and use its pack."""
    ds = _unpacked(tmp_path / "ds", n=400)
    packs = tmp_path / "packs"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "autopack_job.py"),
                str(ds),
                str(packs),
                str(tmp_path / f"{k}"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )
        for k in range(3)
    ]
    errs = []
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
        errs.append(err)
    assert sum("hotset: packing" in err for err in errs) == 1
    for k in range(3):
        assert sorted(json.loads((tmp_path / f"{k}").read_text())) == list(range(400))
    assert sorted(p.name for p in packs.iterdir() if not p.name.endswith(".lock")) == [
        Manifest.load(ds).identity()
    ]  # no temporary folder left behind


# -- label-homogeneous chunks ---------------------------------------------------------


def _homogeneity_warnings(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if "label-homogeneous" in str(w.message)]


@pytest.mark.parametrize("system", ["brand", "quiver"])
def test_label_sorted_chunks_warn_once_with_the_repack_command_and_shuffled_ones_do_not(
    tmp_path: Path, system: str
) -> None:
    ds = label_sorted_synth(tmp_path / "ds", n=160, seed=2)
    assert np.all(np.diff(Manifest.load(ds).labels) >= 0)  # ids follow the labels
    pack_dataset(ds, chunk_size=8, shuffle_seed=None)  # `hotset data pack --no-shuffle`
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):  # once, however many loaders
            with hotset.loader(ds, system=system, cache=0.3, batch_size=8) as loader:
                next(iter(loader))
        with hotset.loader(ds, system="lru", cache=0.3, batch_size=8) as loader:
            next(iter(loader))  # reads samples: its chunks do not matter
    found = _homogeneity_warnings(record)
    assert len(found) == 1, found
    assert found[0].startswith("hotset: ")
    assert f"`hotset data pack {ds} --chunk-size 8 --shuffle-seed 0`" in found[0]
    assert [w.filename for w in record if "label-homogeneous" in str(w.message)] == [__file__]

    pack_dataset(ds, chunk_size=8)  # what the warning says: the default, a seeded shuffle
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with hotset.loader(ds, system=system, cache=0.3, batch_size=8) as loader:
            ids = [i for _, _, batch, _ in loader for i in batch.tolist()]
    assert sorted(ids) == list(range(160))
    assert _homogeneity_warnings(record) == []


class _EIOStore(FaultyStore):
    """A disk that answers EIO for one key: an OSError from reading the data set."""

    def __init__(self, inner: Any, bad: str) -> None:
        super().__init__(inner)
        self.bad = bad

    def _before(self, key: str) -> None:
        if key == self.bad:
            raise OSError(errno.EIO, "Input/output error")


def test_a_sample_that_cannot_be_read_while_packing_is_not_blamed_on_pack_dir(
    tmp_path: Path,
) -> None:
    ds = _unpacked(tmp_path / "ds", n=24)
    key = Manifest.load(ds).keys[5]
    data = hotset.open_dataset(ds, retries=0, store=_EIOStore(LocalStore(ds), key))
    with pytest.raises(StorageError) as info:
        hotset.loader(data, system="brand", cache=0.3, batch_size=8, pack_dir=tmp_path / "p")
    assert "Input/output error" in str(info.value) and "pack_dir" not in str(info.value)
    assert [p.name for p in (tmp_path / "p").iterdir()] == [
        f".{Manifest.load(ds).identity()}.lock"
    ]  # no pack, and no half-written one
