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


# -- symbolic links: a key never leads outside the root (issue #25 item 7) -------------


def _linked_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A root with links out (a file, a folder, the root's parent) and links within."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "data").mkdir(parents=True)
    (outside / "folder").mkdir(parents=True)
    (outside / "secret").write_bytes(b"not yours")
    (outside / "folder" / "f").write_bytes(b"also not yours")
    (root / "data" / "real").write_bytes(b"mine")
    (root / "data" / "file-out").symlink_to(outside / "secret")
    (root / "data" / "relative-out").symlink_to(Path("..") / ".." / "outside" / "secret")
    (root / "folder-out").symlink_to(outside / "folder", target_is_directory=True)
    (root / "data" / "file-in").symlink_to("real")
    (root / "folder-in").symlink_to("data", target_is_directory=True)
    return root, outside


@pytest.mark.parametrize("key", ["data/file-out", "data/relative-out", "folder-out/f"])
def test_a_key_leading_outside_the_root_is_refused(tmp_path: Path, key: str) -> None:
    root, _ = _linked_tree(tmp_path)
    store = LocalStore(root)
    for call in (store.read, store.size, store.exists, lambda k: store.read_many([k])):
        with pytest.raises(HotsetError, match=f"key '{key}' leads outside the store root"):
            call(key)
    assert store.stats().reads == 0


def test_a_write_through_a_folder_link_out_is_refused(tmp_path: Path) -> None:
    root, outside = _linked_tree(tmp_path)
    with pytest.raises(HotsetError, match="key 'folder-out/new' leads outside"):
        LocalStore(root).write("folder-out/new", b"x")
    assert not (outside / "folder" / "new").exists()


def test_links_within_the_root_are_followed(tmp_path: Path) -> None:
    root, _ = _linked_tree(tmp_path)
    store = LocalStore(root)
    for key in ("data/real", "data/file-in", "folder-in/real", "folder-in/file-in"):
        assert store.read(key) == b"mine"
        assert store.size(key) == 4 and store.exists(key)
    assert list(store.list_keys()) == ["data/file-in", "data/real"]  # links out left out


def test_a_root_that_is_itself_a_link_works(tmp_path: Path) -> None:
    root, _ = _linked_tree(tmp_path)
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)
    store = LocalStore(alias)
    assert store.read("data/file-in") == b"mine"
    with pytest.raises(HotsetError, match="leads outside"):
        store.read("data/file-out")


def test_large_and_empty_files_read_whole(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    big = os.urandom(3 << 20)
    store.write("big", big)
    store.write("empty", b"")
    assert store.read("big") == big and store.read("empty") == b""


def test_a_key_too_long_for_the_file_system_is_missing_not_an_os_error(tmp_path: Path) -> None:
    """ENAMETOOLONG escaped as a plain OSError, which the retries took for a transient one."""
    store = LocalStore(tmp_path)
    for key in ("a" * 300, "x/" + "b" * 300):
        with pytest.raises(HotsetError, match="no such key"):
            store.read(key)
        with pytest.raises(HotsetError, match="no such key"):
            store.size(key)
        assert not store.exists(key)
