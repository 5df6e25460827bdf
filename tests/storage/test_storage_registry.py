"""open_store: scheme registry, plain paths, and the unknown-scheme error."""

from __future__ import annotations

import uuid
from pathlib import Path

import fsspec
import pytest

from hotset.errors import HotsetError
from hotset.storage import (
    FsspecStore,
    LocalStore,
    Store,
    known_schemes,
    open_store,
    register_scheme,
)
from hotset.storage.registry import split_scheme


def test_plain_paths_and_file_urls_open_local_stores(tmp_path: Path) -> None:
    (tmp_path / "k").write_bytes(b"v")
    for location in (tmp_path, str(tmp_path), f"file://{tmp_path}", f"local://{tmp_path}"):
        store = open_store(location)
        assert isinstance(store, LocalStore)
        assert store.read("k") == b"v"


def test_memory_urls_open_fsspec_stores() -> None:
    root = f"/hotset-registry-{uuid.uuid4().hex}"
    store = open_store(f"memory://{root}", create=True)
    assert isinstance(store, FsspecStore) and isinstance(store, Store)
    store.write("a", b"1")
    assert fsspec.filesystem("memory").cat_file(f"{root}/a") == b"1"
    fsspec.filesystem("memory").rm(root, recursive=True)


def test_create_option_reaches_the_local_store(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="not a directory"):
        open_store(tmp_path / "new")
    assert isinstance(open_store(tmp_path / "new", create=True), LocalStore)
    assert (tmp_path / "new").is_dir()


def test_local_store_rejects_remote_options(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="anon"):
        open_store(tmp_path, anon=True)


@pytest.mark.parametrize(
    ("url", "bad"),
    [("xyz://bucket/k", "xyz"), ("s4://bucket", "s4"), ("simplecache::nope://b", "nope")],
)
def test_unknown_scheme_is_caught_at_open(url: str, bad: str) -> None:
    with pytest.raises(HotsetError) as info:
        open_store(url)
    message = str(info.value)
    assert message.startswith(f"unknown URL scheme '{bad}' in '{url}'; known: ")
    known = message.split("known: ", 1)[1].split(", ")
    assert {"file", "memory", "s3"} <= set(known)
    assert bad not in known


def test_empty_location_is_an_error() -> None:
    with pytest.raises(HotsetError, match="empty"):
        open_store("")


def test_registered_scheme_wins(tmp_path: Path) -> None:
    seen: list[str] = []

    def factory(url: str, **options: object) -> Store:
        seen.append(url)
        return LocalStore(tmp_path)

    register_scheme("hotsettest", factory)
    try:
        assert "hotsettest" in known_schemes()
        assert isinstance(open_store("hotsettest://x"), LocalStore)
        assert seen == ["hotsettest://x"]
    finally:
        from hotset.storage import registry

        registry.STORES.unregister("hotsettest")


def test_a_scheme_is_not_taken_from_its_factory_without_replace(tmp_path: Path) -> None:
    from hotset.storage import registry

    def mine(url: str, **options: object) -> Store:
        return LocalStore(tmp_path)

    def other(url: str, **options: object) -> Store:
        raise AssertionError("never opened")

    register_scheme("hotsetdup", mine)
    try:
        register_scheme("hotsetdup", mine)  # the same factory again: nothing changes
        with pytest.raises(
            HotsetError,
            match=r"URL scheme 'hotsetdup' is already registered as .*mine; pass replace=True",
        ):
            register_scheme("hotsetdup", other)
        assert isinstance(open_store("hotsetdup://x"), LocalStore)  # still the first
        with pytest.raises(HotsetError, match="replace must be True or False, got 'yes'"):
            register_scheme("hotsetdup", other, replace="yes")  # type: ignore[arg-type]
        register_scheme("hotsetdup", other, replace=True)
        assert registry.STORES.get("hotsetdup") is other
    finally:
        registry.STORES.unregister("hotsetdup")


def test_register_scheme_rejects_urls() -> None:
    with pytest.raises(HotsetError, match="bad URL scheme 's3://'"):
        register_scheme("s3://", lambda url: LocalStore("."))


def test_split_scheme() -> None:
    assert split_scheme("s3://b/k") == ("s3", "b/k")
    assert split_scheme("/data/x") == ("", "/data/x")
    assert split_scheme("simplecache::s3://b") == ("simplecache::s3", "b")
