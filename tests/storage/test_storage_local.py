"""LocalStore: round trip, atomic writes, bad keys, missing keys, counters."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hotset.errors import HotsetError
from hotset.storage import LocalStore, Store


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_round_trip_and_counters(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    assert isinstance(store, Store)
    store.write("a/b.bin", b"hello")
    store.write("c", b"")
    assert store.read("a/b.bin") == b"hello"
    assert store.read_many(["c", "a/b.bin"]) == [b"", b"hello"]
    assert store.size("a/b.bin") == 5
    assert store.exists("a/b.bin") and not store.exists("a/zzz")
    assert list(store.list_keys()) == ["a/b.bin", "c"]
    stats = store.stats()
    assert (stats.reads, stats.bytes_read, stats.writes, stats.bytes_written) == (3, 10, 2, 5)
    store.reset_stats()
    assert store.stats().reads == 0


def test_overwrite_replaces_bytes(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.write("k", b"old-and-long")
    store.write("k", b"new")
    assert (tmp_path / "k").read_bytes() == b"new"


def test_failed_write_leaves_old_bytes_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    store.write("d/k", b"old")

    def broken_replace(src: str, dst: str) -> None:
        assert Path(src).read_bytes() == b"new"  # the temporary was fully written
        raise OSError("disk vanished")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk vanished"):
        store.write("d/k", b"new")
    assert _files(tmp_path) == ["d/k"]
    assert (tmp_path / "d" / "k").read_bytes() == b"old"
    assert store.stats().writes == 1


def test_write_interrupted_mid_copy_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    real_fdopen = os.fdopen

    class HalfWriter:
        def __init__(self, fd: int, mode: str) -> None:
            self._fh = real_fdopen(fd, mode)

        def __enter__(self) -> HalfWriter:
            return self

        def __exit__(self, *exc: object) -> None:
            self._fh.close()

        def write(self, data: bytes) -> int:
            self._fh.write(data[: len(data) // 2])
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "fdopen", HalfWriter)
    with pytest.raises(KeyboardInterrupt):
        store.write("k", b"0123456789")
    assert _files(tmp_path) == []
    assert not store.exists("k")


@pytest.mark.parametrize("key", ["../escape", "/etc/passwd", "a/../../b", "", "a//b"])
def test_bad_keys(tmp_path: Path, key: str) -> None:
    store = LocalStore(tmp_path)
    for call in (store.read, store.exists, store.size):
        with pytest.raises(HotsetError, match="bad store key"):
            call(key)
    with pytest.raises(HotsetError, match="bad store key"):
        store.write(key, b"x")
    assert _files(tmp_path) == []
    assert not (tmp_path.parent / "escape").exists()


def test_missing_key_errors_name_key_and_store(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    (tmp_path / "dir").mkdir()
    for key in ("nope", "dir", "nope/deeper"):
        with pytest.raises(HotsetError, match=f"no such key '{key}'"):
            store.read(key)
        with pytest.raises(HotsetError, match="no such key"):
            store.size(key)
    assert store.stats().reads == 0


def test_root_must_be_a_directory_unless_created(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="is not a directory"):
        LocalStore(tmp_path / "missing")
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(HotsetError, match="cannot create store root"):
        LocalStore(tmp_path / "file", create=True)
    store = LocalStore(tmp_path / "new" / "root", create=True)
    assert store.root.is_dir()


def test_hidden_temporaries_are_not_listed(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.write("x/visible", b"1")
    (tmp_path / "x" / ".visible.123.tmp").write_bytes(b"partial")
    assert list(store.list_keys()) == ["x/visible"]


def test_a_pickled_store_counts_afresh_in_the_new_process(tmp_path: Path) -> None:
    import pickle

    store = LocalStore(tmp_path)
    store.write("a.bin", b"xyz")
    store.read("a.bin")
    copy = pickle.loads(pickle.dumps(store))
    assert copy.read("a.bin") == b"xyz"
    assert copy.stats().reads == 1
    assert store.stats().reads == 1
