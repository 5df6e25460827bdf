"""Packed data sets never deliver a wrong sample (issue #25, item 1 and item 7's skip counts).

A chunk's own hash only proves the file is the one ``chunks.json`` describes. These
tests break the link between ``chunks.json`` and the manifest the two ways the issue
found -- the ``ids`` of every chunk reversed, and new data of the same sizes copied
over a packed directory -- and run Quiver and Brand through ``hotset.loader`` with
real DataLoader worker processes on real files: every sample delivered must be the
file's bytes, and what cannot be delivered must be a clear error (or, with
``on_error="skip"``, named exactly).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import hotset
from hotset.data import SynthConfig, make_synth
from hotset.data.chunks import pack_dataset
from hotset.errors import HotsetError, IntegrityError

N = 192
CHUNK = 16
SEED = 1  # the pack's shuffle seed
SYSTEMS = ["quiver", "brand"]


def _synth(path: Path, seed: int) -> Path:
    """``N`` .npy samples: every one the same size, as in the issue's repro."""
    make_synth(path, SynthConfig(n=N, image_size=8, classes=4, seed=seed, format="npy"), workers=1)
    return path


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = _synth(tmp_path_factory.mktemp("chunkint") / "ds", seed=0)
    pack_dataset(path, chunk_size=CHUNK, shuffle_seed=SEED)
    return path


@pytest.fixture(scope="module")
def newer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Other data of the same count and sizes (another seed), never packed."""
    return _synth(tmp_path_factory.mktemp("chunkint-new") / "ds", seed=9)


def _copy(packed: Path, tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    shutil.copytree(packed, out)
    return out


def _edit_layout(path: Path, edit: Any) -> None:
    doc = json.loads((path / "chunks.json").read_text())
    edit(doc)
    (path / "chunks.json").write_text(json.dumps(doc))


def _reverse_ids(doc: dict[str, Any]) -> None:
    for chunk in doc["chunks"]:
        chunk["ids"].reverse()


def _swap_first_two(doc: dict[str, Any]) -> None:
    """Chunk 0's first two members change places (the rest of the set stays right)."""
    ids = doc["chunks"][0]["ids"]
    ids[0], ids[1] = ids[1], ids[0]


def _copy_over(newer: Path, path: Path) -> None:
    """The realistic trigger: new data copied over a packed directory (chunks stay)."""
    for item in newer.iterdir():
        if item.is_dir():
            shutil.copytree(item, path / item.name, dirs_exist_ok=True)
        else:
            shutil.copy(item, path / item.name)


def _deliver(
    path: Path, system: str, **options: Any
) -> tuple[dict[int, bytes], HotsetError | None, Any]:
    """One epoch through ``hotset.loader`` with 2 workers: (what was delivered, the error
    that stopped it or None, the loader after it closed)."""
    data = hotset.open_dataset(path, decode="bytes")
    delivered: dict[int, bytes] = {}
    error: HotsetError | None = None
    with hotset.loader(
        data, system=system, cache="20%", batch_size=16, num_workers=2, seed=3, **options
    ) as loader:
        loader.set_epoch(0)
        try:
            for x, _, ids, _ in loader:
                for blob, sid in zip(x, ids.tolist(), strict=True):
                    assert sid not in delivered, f"id {sid} delivered twice"
                    delivered[sid] = blob
        except HotsetError as exc:
            error = exc
    return delivered, error, loader


def _wrong(path: Path, delivered: dict[int, bytes]) -> list[int]:
    """Ids delivered with other bytes than the file the manifest names."""
    keys = hotset.open_dataset(path).manifest.keys
    return [sid for sid, blob in delivered.items() if blob != (path / keys[sid]).read_bytes()]


@pytest.mark.parametrize("system", SYSTEMS)
def test_reversed_chunk_ids_are_an_error_naming_chunk_and_sample(
    packed: Path, tmp_path: Path, system: str
) -> None:
    """chunks.json edited (the fingerprint kept): every member is checked on its way out."""
    path = _copy(packed, tmp_path)
    _edit_layout(path, _reverse_ids)
    delivered, error, _ = _deliver(path, system)
    assert _wrong(path, delivered) == []
    assert isinstance(error, IntegrityError)
    assert str(error).startswith("chunk ")
    assert "('chunks/c0000" in str(error) and "): sample " in str(error)
    assert f"hotset data pack {path} --chunk-size {CHUNK} --shuffle-seed {SEED}" in str(error)


@pytest.mark.parametrize("system", SYSTEMS)
def test_new_data_copied_over_a_packed_set_is_refused_with_the_pack_command(
    packed: Path, newer: Path, tmp_path: Path, system: str
) -> None:
    path = _copy(packed, tmp_path)
    _copy_over(newer, path)
    with pytest.raises(HotsetError, match="stale") as info:
        _deliver(path, system)
    assert f"`hotset data pack {path} --chunk-size {CHUNK} --shuffle-seed {SEED}`" in str(
        info.value
    )
    pack_dataset(path, chunk_size=CHUNK, shuffle_seed=SEED)  # what the message says to do
    delivered, error, _ = _deliver(path, system)
    assert error is None and len(delivered) == N and _wrong(path, delivered) == []


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_layout_without_fingerprint_still_loads_and_a_stale_one_is_caught_at_read(
    packed: Path, newer: Path, tmp_path: Path, system: str
) -> None:
    """chunks.json from before the fingerprint: accepted, and its chunks' members checked."""
    path = _copy(packed, tmp_path)
    _edit_layout(path, lambda doc: doc.pop("manifest_identity"))
    delivered, error, _ = _deliver(path, system)
    assert error is None and len(delivered) == N and _wrong(path, delivered) == []
    _copy_over(newer, path)
    delivered, error, _ = _deliver(path, system)
    assert _wrong(path, delivered) == []
    assert isinstance(error, IntegrityError) and "): sample " in str(error)


def _flip_a_byte(path: Path) -> None:
    layout = hotset.open_dataset(path).layout
    assert layout is not None
    chunk = path / layout.chunk_keys[2]
    raw = bytearray(chunk.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    chunk.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", ["flipped byte", "reversed ids"])
@pytest.mark.parametrize("system", SYSTEMS)
def test_skip_names_exactly_the_samples_not_delivered(
    packed: Path, tmp_path: Path, system: str, damage: str
) -> None:
    """on_error="skip": the count and loader.skipped() are the ids the epoch lacks.

    A chunk read that fails names every member, but members only loading the cache
    are read again later (rebuild reads): they are delivered, so never skipped.
    """
    path = _copy(packed, tmp_path)
    if damage == "flipped byte":
        _flip_a_byte(path)
    else:
        _edit_layout(path, _reverse_ids)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        delivered, error, loader = _deliver(path, system, on_error="skip")
    assert error is None
    assert _wrong(path, delivered) == []
    not_delivered = set(range(N)) - set(delivered)
    assert set(loader.skipped()) == not_delivered
    row = loader.report()[0]
    assert row["skipped"] == len(not_delivered)
    assert row["rebuild_reads"] + row["skipped"] > 0  # the damage was met
    assert row["integrity_errors"] == 0  # storage's bad bytes never reach the cache
    for why in loader.skipped().values():
        assert "chunks/c0000" in why
    warned = [w for w in caught if "skipping samples" in str(w.message)]
    assert len(warned) == (1 if not_delivered else 0)


def test_a_whole_unit_from_the_pool_is_cut_and_checked_like_a_read(
    packed: Path, tmp_path: Path, redis_url: str
) -> None:
    """A job on an edited chunks.json finds the whole units another job put (their hash is
    right: the chunk files are the same): they are refused, never cut into wrong samples."""
    from chunked_system import registered

    edited = _copy(packed, tmp_path)
    _edit_layout(edited, _reverse_ids)

    def job(path: Path) -> tuple[dict[int, bytes], HotsetError | None, Any]:
        data = hotset.open_dataset(path, decode="bytes")
        delivered: dict[int, bytes] = {}
        with hotset.loader(
            data,
            system="chunk_lru_whole",
            cache=redis_url,
            cache_bytes=1.0,
            namespace="team",
            batch_size=16,
            num_workers=2,
            seed=3,
        ) as loader:
            loader.set_epoch(0)
            try:
                for x, _, ids, _ in loader:
                    delivered.update(zip(ids.tolist(), x, strict=True))
            except HotsetError as exc:
                return delivered, exc, loader
        return delivered, None, loader

    with registered():
        good, error, first = job(packed)
        assert error is None and len(good) == N and _wrong(packed, good) == []
        assert first.report()[0]["unit_reads"] > 0  # whole units went to the pool
        delivered, error, _ = job(edited)
    assert _wrong(edited, delivered) == []
    assert isinstance(error, IntegrityError) and "): sample " in str(error)


def test_the_reader_cuts_units_from_storage_and_from_the_cache_apart(
    packed: Path, tmp_path: Path
) -> None:
    """From storage a bad member is an error (or, skipping, left out alone); from the cache
    the whole entry is refused (read again). A cut that cannot be made is no exception."""
    from hotset.torch.reads import StoreReader

    path = _copy(packed, tmp_path)
    _edit_layout(path, _swap_first_two)
    data = hotset.open_dataset(path, decode="bytes")
    layout = data.layout
    assert layout is not None
    swapped = layout.members(0).tolist()[:2]
    whole = (path / layout.chunk_keys[0]).read_bytes()

    def reader(*, verify: bool, skip: bool = False) -> StoreReader:
        m = data.manifest
        return StoreReader(
            store=data.store,
            keys=m.keys,
            hashes=m.hashes,
            sizes=m.sizes.tolist(),
            layout=layout,
            io_threads=1,
            verify=verify,
            skip_errors=skip,
        )

    with pytest.raises(
        IntegrityError, match=rf"chunk 0 \('chunks/c000000.bin'\): sample {swapped[0]} "
    ):
        reader(verify=True).split_read(0, whole)
    skipping = reader(verify=True, skip=True)
    parts, complete = skipping.split_read(0, whole)
    assert not complete and sorted(skipping.take_failed()) == sorted(swapped)
    assert sorted(parts) == sorted(layout.members(0).tolist()[2:])
    assert reader(verify=True).split_cached(0, whole) is None
    assert reader(verify=False).split_cached(0, whole) is not None  # same sizes: opted out
    assert reader(verify=False).split_cached(0, whole[:-1]) is None  # was an IntegrityError
