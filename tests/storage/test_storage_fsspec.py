"""FsspecStore on memory://, file:// and an asynchronous file system (batched reads)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from hotset.errors import HotsetError
from hotset.storage import FsspecStore, Store


def _memory_root() -> str:
    return f"/hotset-test-{uuid.uuid4().hex}"


@pytest.fixture(params=["memory", "file", "async"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FsspecStore]:
    if request.param == "file":
        yield FsspecStore(f"file://{tmp_path}/root", create=True)
        return
    root = _memory_root()
    url = f"memory://{root}" if request.param == "memory" else f"async_wrapper::memory://{root}"
    yield FsspecStore(url, create=True)
    mem = fsspec.filesystem("memory")
    if mem.exists(root):
        mem.rm(root, recursive=True)


def test_round_trip_and_counters(store: FsspecStore) -> None:
    assert isinstance(store, Store)
    store.write("a/b.bin", b"hello")
    store.write("c", b"xy")
    assert store.read("a/b.bin") == b"hello"
    assert store.size("c") == 2
    assert store.exists("c") and not store.exists("a") and not store.exists("zz")
    assert list(store.list_keys()) == ["a/b.bin", "c"]
    stats = store.stats()
    assert (stats.reads, stats.bytes_read, stats.writes, stats.bytes_written) == (1, 5, 2, 7)
    assert stats.seconds > 0
    store.reset_stats()
    assert store.stats().reads == 0


def test_read_many_keeps_order_and_fetches_repeats_once(store: FsspecStore) -> None:
    for i in range(5):
        store.write(f"k{i}", bytes([i]) * (i + 1))
    keys = ["k3", "k0", "k3", "k4"]
    assert store.read_many(keys) == [b"\x03" * 4, b"\x00", b"\x03" * 4, b"\x04" * 5]
    stats = store.stats()
    assert stats.reads == 3
    assert stats.bytes_read == 4 + 1 + 5
    assert store.read_many([]) == []


def test_missing_keys_raise_hotset_error(store: FsspecStore) -> None:
    store.write("present", b"1")
    with pytest.raises(HotsetError, match="no such key 'absent'"):
        store.read("absent")
    with pytest.raises(HotsetError, match="no such key 'absent'"):
        store.read_many(["present", "absent"])
    with pytest.raises(HotsetError, match="no such key 'absent'"):
        store.size("absent")


@pytest.mark.parametrize("key", ["../x", "/abs", "a/../b", ""])
def test_bad_keys(store: FsspecStore, key: str) -> None:
    with pytest.raises(HotsetError, match="bad store key"):
        store.read(key)
    with pytest.raises(HotsetError, match="bad store key"):
        store.write(key, b"x")
    assert list(store.list_keys()) == []


def test_async_file_system_reads_a_batch_with_one_cat(monkeypatch: pytest.MonkeyPatch) -> None:
    store = FsspecStore(f"async_wrapper::memory://{_memory_root()}", create=True)
    for key in ("x", "y", "z"):
        store.write(key, key.encode())
    calls: list[list[str]] = []
    real_cat = store.fs.cat

    def spy(paths: list[str], **kwargs: Any) -> Any:
        calls.append(list(paths))
        return real_cat(paths, **kwargs)

    monkeypatch.setattr(store.fs, "cat", spy)
    assert store.read_many(["z", "x", "y"]) == [b"z", b"x", b"y"]
    assert len(calls) == 1 and len(calls[0]) == 3
    store.fs.rm(store.root, recursive=True)


def test_glob_characters_in_keys_are_literal(store: FsspecStore) -> None:
    store.write("a[1]", b"one")
    store.write("a1", b"other")
    store.write("b*", b"star")
    assert store.read_many(["a[1]", "b*"]) == [b"one", b"star"]


def test_file_write_is_atomic_when_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FsspecStore(f"file://{tmp_path}", create=True)
    store.write("d/k", b"old")

    def broken_mv(*args: Any, **kwargs: Any) -> None:
        raise OSError("link down")

    monkeypatch.setattr(store.fs, "mv", broken_mv)
    with pytest.raises(OSError, match="link down"):
        store.write("d/k", b"new")
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["k"]
    assert (tmp_path / "d" / "k").read_bytes() == b"old"


def test_root_must_exist_unless_created(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="not a directory"):
        FsspecStore(f"file://{tmp_path}/missing")
    with pytest.raises(HotsetError, match="not a directory"):
        FsspecStore(f"memory://{_memory_root()}")


def test_unknown_protocol_is_a_hotset_error() -> None:
    with pytest.raises(HotsetError, match="xyz"):
        FsspecStore("xyz://bucket/x")


def test_missing_s3fs_names_it_and_the_s3_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend s3fs is not installed even where it is: None in sys.modules makes
    # any import of it fail, and dropping a registered class forces a fresh import.
    monkeypatch.setitem(sys.modules, "s3fs", None)
    monkeypatch.delitem(sys.modules["fsspec.registry"]._registry, "s3", raising=False)
    with pytest.raises(HotsetError, match=r"pip install s3fs.*pip install hotset\[s3\]"):
        FsspecStore("s3://some-bucket/data")
