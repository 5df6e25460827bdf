"""Pack a data set whose samples are in an object store, in that store.

Why there: a chunk read is worth packing for because it is ONE request to the
store that holds the data; chunks written to local disk would be a copy of the
data set, and a job on another machine would not find them. So the chunk files
go beside the samples, as ``chunks/cNNNNNN.bin`` under the store's root (one
PUT each), and ``chunks.json`` beside ``manifest.csv``: into the store for a
data set opened by URL (``s3://bucket/prefix``), into the local folder for a
local manifest whose ``root`` is a URL (``hotset data import URL --out DIR``).
A reader then reads a chunk, or a run of its members, with ranged GETs of
the chunk object (:mod:`hotset.storage.s3_store`).

Order, so that no layout ever points at chunk files being replaced: the old
``chunks.json`` is deleted first, every chunk is read, checked and PUT (an
object PUT is atomic), chunk objects a shorter re-pack no longer lists are
deleted, and ``chunks.json`` is written last. A pack that dies midway leaves
no layout: packing again starts over. Each sample is read through a
:class:`~hotset.storage.retry.RetryingStore` and checked against the manifest's
size and xxh3, as the local pack does.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from hotset.data.chunks import (
    CHUNK_DIR,
    CHUNKS_JSON,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_SHUFFLE_SEED,
    ChunkLayout,
    check_chunk_size,
    check_shuffle_seed,
    layout_path,
    write_chunks,
)
from hotset.data.manifest import Manifest
from hotset.data.opener import is_url, open_dataset
from hotset.errors import HotsetError
from hotset.storage.base import Store

__all__ = ["pack_store", "packs_in_store"]


def packs_in_store(location: str | os.PathLike[str]) -> bool:
    """Whether ``location``'s samples are in a store named by URL (then :func:`pack_store`)."""
    text = os.fspath(location)
    if is_url(text):
        return True
    csv_path, _ = Manifest.paths(text.removeprefix("file://"))
    if not csv_path.is_file():
        return False
    root = Manifest.load(csv_path).meta.get("root", ".")
    return isinstance(root, str) and is_url(root)


def pack_store(
    location: str | os.PathLike[str],
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    shuffle_seed: int | None = DEFAULT_SHUFFLE_SEED,
    progress: bool = False,
) -> ChunkLayout:
    """Pack the data set at ``location`` into its own store; return the layout (see the module).

    ``chunk_size`` and ``shuffle_seed`` mean what they mean to
    :func:`hotset.data.chunks.pack_dataset`, and the layout is the same one,
    byte for byte, that a local pack of the same data makes.
    """
    from hotset.storage.retry import RetryingStore

    chunk_size = check_chunk_size(chunk_size)
    seed = check_shuffle_seed(shuffle_seed)
    text = os.fspath(location)
    manifest, store = open_dataset(text)
    clash = next((k for k in manifest.keys if k.split("/", 1)[0] == CHUNK_DIR), None)
    if clash is not None:
        raise HotsetError(
            f"cannot pack: sample key {clash!r} lies in {CHUNK_DIR}/, where chunk files go"
        )
    delete = getattr(store, "delete", None)
    in_store = is_url(text)  # else chunks.json goes beside the local manifest
    old = [k for k in store.list_keys() if k.startswith(CHUNK_DIR + "/")]
    if in_store and delete is not None:
        delete(CHUNKS_JSON)
    elif not in_store:
        layout_path(text).unlink(missing_ok=True)
    layout = write_chunks(
        manifest,
        RetryingStore(store),
        None,
        chunk_size=chunk_size,
        shuffle_seed=seed,
        progress=progress,
        desc="pack",
        dataset=text.rstrip("/") if in_store else str(layout_path(text).parent),
        put=_put(store),
    )
    if delete is not None:
        for key in sorted(set(old) - set(layout.chunk_keys)):
            delete(key)
    if in_store:
        store.write(CHUNKS_JSON, layout.to_json().encode())
    else:
        layout.save(text)
    return layout


def _put(store: Store) -> Callable[[str, bytes], None]:
    def put(key: str, blob: bytes) -> None:
        try:
            store.write(key, blob)
        except OSError as exc:
            raise HotsetError(f"cannot write chunk {key!r} to {store!r}: {exc}") from None

    return put
