"""Manifest: round trips, atomic saves, and every validation error naming its culprit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.data import open_dataset
from hotset.data.manifest import DATASET_JSON, MANIFEST_CSV, Manifest, content_hash
from hotset.errors import HotsetError
from hotset.storage.local import LocalStore

GOOD_HASH = "0123456789abcdef"


def _small(n: int = 4, meta: dict[str, object] | None = None) -> Manifest:
    keys = [f"a/{i}.png" for i in range(n)]
    return Manifest(
        list(range(n)),
        keys,
        [10 * (i + 1) for i in range(n)],
        [i % 2 for i in range(n)],
        [content_hash(k.encode()) for k in keys],
        meta if meta is not None else {"format": "png", "num_classes": 2},
    )


def _write_csv(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / MANIFEST_CSV
    path.write_text("\n".join(lines) + "\n")
    return tmp_path


def _row(
    i: int, key: str | None = None, size: str = "5", label: str = "0", h: str = GOOD_HASH
) -> str:
    return f"{i},{key if key is not None else f'k/{i}.png'},{size},{label},{h}"


HEADER = "id,key,size,label,xxh3"


def test_round_trip_through_dir_and_csv_path(tmp_path: Path) -> None:
    m = _small(meta={"format": "png", "num_classes": 2, "class_names": ["a", "b"], "seed": 3})
    csv_path = m.save(tmp_path / "ds")
    assert csv_path == tmp_path / "ds" / MANIFEST_CSV
    for source in (tmp_path / "ds", csv_path):
        back = Manifest.load(source)
        assert back == m
        assert back.meta["class_names"] == ["a", "b"]
    assert m.total_bytes == 10 + 20 + 30 + 40
    assert m.num_classes == 2
    assert len(m) == 4
    assert m.ids.dtype == np.int64 and m.sizes.dtype == np.int64 and m.labels.dtype == np.int64


def test_save_to_a_named_csv_puts_dataset_json_beside_it(tmp_path: Path) -> None:
    m = _small()
    csv_path = m.save(tmp_path / "elsewhere" / "mine.csv")
    assert csv_path.name == "mine.csv"
    assert (tmp_path / "elsewhere" / DATASET_JSON).is_file()
    assert Manifest.load(csv_path) == m


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 10**12), st.integers(-1, 50), st.text('abc,é"x', min_size=1, max_size=6)
        ),
        min_size=1,
        max_size=30,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_row_order_round_trips_sorted_by_id(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[int, int, str]], seed: int
) -> None:
    n = len(rows)
    order = np.random.default_rng(seed).permutation(n)
    keys = [f"d{i}/{name}.npy" for i, (_, _, name) in enumerate(rows)]
    sizes = [r[0] for r in rows]
    labels = [r[1] for r in rows]
    hashes = [content_hash(k.encode()) for k in keys]
    # input row j carries id order[j] and that id's fields; sorting must undo the shuffle
    shuffled = Manifest(
        order,
        [keys[o] for o in order],
        [sizes[o] for o in order],
        [labels[o] for o in order],
        [hashes[o] for o in order],
        {},
    )
    assert shuffled.keys == keys
    assert shuffled.sizes.tolist() == sizes
    assert shuffled.labels.tolist() == labels
    d = tmp_path_factory.mktemp("rt")
    shuffled.save(d)
    back = Manifest.load(d)
    assert back == shuffled
    assert back.num_classes == (max(labels) + 1 if max(labels) >= 0 else 0)


def test_load_sorts_shuffled_rows_by_id(tmp_path: Path) -> None:
    _write_csv(tmp_path, [HEADER, _row(2), _row(0), _row(1)])
    m = Manifest.load(tmp_path)
    assert m.keys == ["k/0.png", "k/1.png", "k/2.png"]
    assert m.ids.tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        (_row(1, size="x"), "line 3: field size: 'x' is not an integer"),
        ("z,k/1.png,5,0," + GOOD_HASH, "line 3: field id: 'z' is not an integer"),
        (_row(1, label="one"), "line 3: field label: 'one' is not an integer"),
        (_row(1, size="-4"), "line 3: field size: -4 is below 0"),
        (_row(1, label="-2"), "line 3: field label: -2 is below -1"),
        (_row(1, h="0123456789ABCDEF"), "line 3: field xxh3"),
        (_row(1, h="abc"), "line 3: field xxh3"),
        (_row(1, key="../up.png"), "line 3: field key"),
        (_row(1, key="/abs.png"), "line 3: field key"),
        ("1,k/1.png,5,0", "line 3: expected 5 fields, got 4"),
    ],
)
def test_bad_field_names_line_and_field(tmp_path: Path, row: str, needle: str) -> None:
    _write_csv(tmp_path, [HEADER, _row(0), row])
    with pytest.raises(HotsetError, match=r"manifest\.csv") as exc:
        Manifest.load(tmp_path)
    assert needle in str(exc.value)
    assert "\n" not in str(exc.value)


def test_duplicate_id_is_named(tmp_path: Path) -> None:
    _write_csv(tmp_path, [HEADER, _row(0), _row(1), _row(1, key="other.png")])
    with pytest.raises(HotsetError, match=r"line 4: duplicate id 1 \(first on line 3\)"):
        Manifest.load(tmp_path)


def test_duplicate_key_is_named(tmp_path: Path) -> None:
    _write_csv(tmp_path, [HEADER, _row(0, key="same.png"), _row(1, key="same.png")])
    with pytest.raises(HotsetError, match=r"duplicate key 'same\.png'"):
        Manifest.load(tmp_path)


@pytest.mark.parametrize("ids", [[1, 2, 3], [0, 1, 5], [0, 2]])
def test_ids_must_be_dense(tmp_path: Path, ids: list[int]) -> None:
    _write_csv(tmp_path, [HEADER, *(_row(i) for i in ids)])
    with pytest.raises(HotsetError, match=r"ids must be exactly 0\.\.") as exc:
        Manifest.load(tmp_path)
    assert "dense" in str(exc.value)


def test_constructor_rejects_sparse_ids_and_duplicates() -> None:
    with pytest.raises(HotsetError, match="dense"):
        Manifest([0, 2], ["a.png", "b.png"], [1, 1], [0, 0], [GOOD_HASH] * 2, {})
    with pytest.raises(HotsetError, match="duplicate id 0"):
        Manifest([0, 0], ["a.png", "b.png"], [1, 1], [0, 0], [GOOD_HASH] * 2, {})
    with pytest.raises(HotsetError, match="differ in length"):
        Manifest([0, 1], ["a.png"], [1, 1], [0, 0], [GOOD_HASH] * 2, {})
    with pytest.raises(HotsetError, match="empty dataset"):
        Manifest([], [], [], [], [], {})


@pytest.mark.parametrize("lines", [[], [HEADER]])
def test_empty_dataset(tmp_path: Path, lines: list[str]) -> None:
    (tmp_path / MANIFEST_CSV).write_text("\n".join(lines))
    with pytest.raises(HotsetError, match="empty dataset"):
        Manifest.load(tmp_path)


def test_wrong_header(tmp_path: Path) -> None:
    _write_csv(tmp_path, ["id,path,size,label,hash", _row(0)])
    with pytest.raises(HotsetError, match="line 1: header must be id,key,size,label,xxh3"):
        Manifest.load(tmp_path)


def test_missing_dir_and_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="does not exist"):
        Manifest.load(tmp_path / "nope")
    with pytest.raises(HotsetError, match="no manifest in"):
        Manifest.load(tmp_path)


def test_label_beyond_num_classes(tmp_path: Path) -> None:
    _write_csv(tmp_path, [HEADER, _row(0, label="0"), _row(1, label="3")])
    (tmp_path / DATASET_JSON).write_text(json.dumps({"num_classes": 3}))
    with pytest.raises(HotsetError, match="label 3 for id 1 is not below num_classes 3"):
        Manifest.load(tmp_path)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"format": "gif"}', "format 'gif'"),
        ('{"num_classes": -1}', "num_classes"),
        ('{"num_classes": 2, "class_names": ["a"]}', "1 class_names but num_classes is 2"),
    ],
)
def test_bad_metadata(tmp_path: Path, text: str, needle: str) -> None:
    _write_csv(tmp_path, [HEADER, _row(0)])
    (tmp_path / DATASET_JSON).write_text(text)
    with pytest.raises(HotsetError, match=r"dataset\.json") as exc:
        Manifest.load(tmp_path)
    assert needle in str(exc.value)


def test_columns_are_read_only() -> None:
    m = _small()
    with pytest.raises(ValueError, match="read-only"):
        m.labels[0] = 5


def test_save_replaces_atomically_and_leaves_no_temp(tmp_path: Path) -> None:
    _small(4).save(tmp_path)
    _small(6).save(tmp_path)
    assert sorted(os.listdir(tmp_path)) == [DATASET_JSON, MANIFEST_CSV]
    assert len(Manifest.load(tmp_path)) == 6


def test_failed_save_keeps_old_manifest_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small(4).save(tmp_path)
    before = (tmp_path / MANIFEST_CSV).read_bytes()
    real_replace = os.replace

    def failing_replace(src: str, dst: str | Path) -> None:
        if str(dst).endswith(MANIFEST_CSV):
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        _small(6).save(tmp_path)
    monkeypatch.undo()
    assert (tmp_path / MANIFEST_CSV).read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == [DATASET_JSON, MANIFEST_CSV]


def test_open_dataset_local_dir_and_file_url(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    blobs = [b"x" * (i + 1) for i in range(3)]
    keys = [f"a/{i}.npy" for i in range(3)]
    for k, b in zip(keys, blobs, strict=True):
        (tmp_path / k).write_bytes(b)
    Manifest(
        range(3), keys, [len(b) for b in blobs], [-1] * 3, [content_hash(b) for b in blobs], {}
    ).save(tmp_path)
    for source in (str(tmp_path), f"file://{tmp_path}", tmp_path / MANIFEST_CSV):
        m, store = open_dataset(source)
        assert isinstance(store, LocalStore)
        assert [store.read(k) for k in m.keys] == blobs
        assert m.num_classes == 0


def test_open_dataset_unknown_url_scheme_is_a_hotset_error() -> None:
    with pytest.raises(HotsetError):
        open_dataset("nosuchscheme://bucket/ds")
