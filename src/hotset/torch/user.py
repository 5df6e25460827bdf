"""A user's own map-style ``Dataset`` as a hotset data set: ids are its indices.

Most users already have a ``Dataset`` (an ``ImageFolder``, a class of their
own) whose ``__getitem__`` reads from slow storage. :func:`from_dataset` puts
hotset's cache in front of it without a manifest on disk. Two ways, and why:

* **what ``__getitem__`` returns** (the default): hotset caches the item in
  its own safe encoding (:mod:`hotset.data.itemcodec`: tensors, numpy arrays,
  numbers, strings, bytes and tuples/lists/dicts of them; never pickle, since
  cached bytes come back from a cache other clients can write, and unpickling
  runs whatever code they name; any other type is refused when the item is
  measured, with an error that names it and points to ``read=``/``decode=``).
  Nothing to write, but the cached object is the *decoded* one
  (a float tensor is 4x its PNG), so fewer samples fit, and ``__getitem__``
  must be deterministic -- random augmentation belongs in ``transform=``,
  applied after the cache, or every epoch would train the first augmentation;
  a sample that reads back different bytes is an ``IntegrityError`` saying so.
  An item ``(input, int label)`` is split: the loader's ``x`` is the inputs and
  ``y`` the labels, as with a manifest.
* **raw bytes** (``read=``, with ``decode=``): ``read(i) -> bytes`` returns the
  stored bytes (the file) and ``decode`` turns them into the sample. The cache
  holds the compact encoded bytes, so it holds as many samples as a manifest
  data set would, and the policy makes exactly the decisions it makes there.

Sizes and hashes. The engine plans in bytes before any worker reads, so every
sample's size must be known up front: :func:`from_dataset` reads each sample
once (on ``io_threads`` threads, with a progress bar when asked) and records
its size, its xxh3 and its label. On slow storage that pass costs about one
epoch of reads; a data set with a cheap ``size(i)`` (a file's ``stat``) may pass
``sizes=`` instead, and then there are no hashes, so nothing can be verified:
the loader then refuses to start unless it is given ``verify=False``, so that
integrity checks are never off without the user having said so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import xxhash

from hotset.data.itemcodec import decode_item, encode_item
from hotset.data.manifest import Manifest
from hotset.errors import HotsetError, IntegrityError
from hotset.storage.base import StatsCounter, StoreStats
from hotset.torch.dataset import DecodeSpec, HotsetDataset, check_decode
from hotset.torch.userlabels import NOT_GIVEN, LabelsArg, NotGiven, resolve_labels

__all__ = ["ItemStore", "encode_item", "from_dataset", "is_map_style", "is_unhashed"]

#: the hash recorded when sizes are given and nothing was read (no integrity check)
UNHASHED = "0" * 16
#: manifest metadata key marking a data set built from ``sizes=``: it has no hashes
UNHASHED_META = "unhashed"


def is_map_style(obj: object) -> bool:
    """Whether ``obj`` looks like a map-style dataset: ``__getitem__`` and ``__len__``."""
    return hasattr(obj, "__getitem__") and hasattr(obj, "__len__") and not isinstance(obj, str)


def is_unhashed(manifest: Manifest) -> bool:
    """Whether ``manifest`` came from ``from_dataset(sizes=...)``: no hashes to verify by."""
    return manifest.meta.get(UNHASHED_META) is True


def unhashed_verify_error(source: str) -> HotsetError:
    """The loader's error for ``verify=True`` on a data set that has no hashes."""
    return HotsetError(
        f"{source}: from_dataset(..., sizes=...) read nothing up front, so there are no "
        "hashes and no sample can be verified; pass verify=False to the loader to train on "
        "unverified samples, or leave sizes= out so that from_dataset reads and hashes "
        "every sample once"
    )


def _encode_index(dataset: Any, index: int) -> tuple[Any, bytes]:
    """``dataset[index]`` and its cached bytes (an unsupported type names the index)."""
    item = dataset[index]
    return item, encode_item(item, where=f"{type(dataset).__name__}[{index}]")


def _decode(data: bytes, key: str) -> Any:
    """A cached item, as ``__getitem__`` returned it (never unpickled: see the module)."""
    return decode_item(data, where=f"item {key!r}")


def _decode_input(data: bytes, key: str) -> Any:
    """The input of an ``(input, label)`` item (the label is in the manifest)."""
    item = decode_item(data, where=f"item {key!r}")
    if type(item) is not tuple or len(item) != 2:
        raise IntegrityError(f"item {key!r}: cached bytes hold no (input, label) pair")
    return item[0]


class ItemStore:
    """The Store protocol over a user's Dataset: key ``"i"`` is index ``i``.

    Reads either call ``read(i)`` (raw bytes) or encode ``dataset[i]``. It is
    read-only and picklable as long as the dataset (and ``read``) are, which a
    DataLoader with workers needs anyway.
    """

    def __init__(self, dataset: Any, *, read: Callable[[int], bytes] | None = None) -> None:
        self.dataset = dataset
        self._read = read
        self._n = len(dataset)
        self._stats = StatsCounter()

    @property
    def read_fn(self) -> Callable[[int], bytes] | None:
        """The ``read=`` given to :func:`from_dataset` (None: items are encoded)."""
        return self._read

    @property
    def encodes_items(self) -> bool:
        """Items are encoded ``__getitem__`` results (not raw bytes from ``read``)."""
        return self._read is None

    def __repr__(self) -> str:
        how = "read()" if self._read is not None else "__getitem__, encoded"
        return f"ItemStore({type(self.dataset).__name__}, {self._n} items, {how})"

    def _index(self, key: str) -> int:
        try:
            i = int(key)
        except ValueError:
            raise HotsetError(f"{self!r}: key {key!r} is not an index") from None
        if not 0 <= i < self._n:
            raise HotsetError(f"{self!r}: index {i} out of range")
        return i

    def read(self, key: str) -> bytes:
        i = self._index(key)
        start = time.perf_counter()
        if self._read is not None:
            data = self._read(i)
            if not isinstance(data, bytes | bytearray | memoryview):
                raise HotsetError(
                    f"read({i}) must return bytes, got {type(data).__name__}: give read= the "
                    "stored bytes, or leave it out to cache what __getitem__ returns"
                )
            data = bytes(data)
        else:
            data = _encode_index(self.dataset, i)[1]
        self._stats.add_read(len(data), time.perf_counter() - start)
        return data

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        return [self.read(k) for k in keys]

    def size(self, key: str) -> int:
        return len(self.read(key))

    def write(self, key: str, data: bytes) -> None:
        raise HotsetError(f"{self!r} is read-only")

    def exists(self, key: str) -> bool:
        try:
            self._index(key)
        except HotsetError:
            return False
        return True

    def list_keys(self) -> Iterable[str]:
        return (str(i) for i in range(self._n))

    def stats(self) -> StoreStats:
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        self._stats.reset()


def _label(item: Any) -> int | None:
    """The int label of an ``(input, label)`` item, else None."""
    if isinstance(item, tuple) and len(item) == 2:
        label = item[1]
        if hasattr(label, "item") and getattr(label, "ndim", 1) == 0:
            label = label.item()
        if isinstance(label, int | np.integer) and not isinstance(label, bool):
            return int(label)
    return None


def _check_args(dataset: Any, read: object, decode: object, io_threads: object) -> int:
    """``len(dataset)``, once the arguments of :func:`from_dataset` are checked."""
    from torch.utils.data import IterableDataset

    if isinstance(dataset, IterableDataset):
        raise HotsetError(
            "an IterableDataset has no index to cache by: hotset needs a map-style "
            "Dataset (__getitem__ and __len__)"
        )
    if not is_map_style(dataset):
        raise HotsetError(
            f"expected a map-style Dataset (__getitem__ and __len__), got {dataset!r:.80}"
        )
    n = len(dataset)
    if n < 1:
        raise HotsetError(f"the dataset is empty (len {n})")
    if read is not None and not callable(read):
        raise HotsetError(f"read must be a callable(index) -> bytes, got {read!r:.80}")
    if read is not None and decode is None:
        raise HotsetError("read= gives bytes: say how to decode them with decode=")
    if read is None and decode is not None:
        raise HotsetError("decode= needs read=: without it the items are cached as they are")
    if isinstance(io_threads, bool) or not isinstance(io_threads, int) or io_threads < 1:
        raise HotsetError(f"io_threads must be an integer >= 1, got {io_threads!r}")
    return n


def from_dataset(
    dataset: Any,
    *,
    read: Callable[[int], bytes] | None = None,
    decode: DecodeSpec | None = None,
    transform: Callable[[Any], Any] | None = None,
    sizes: Sequence[int] | np.ndarray | None = None,
    labels: LabelsArg = NOT_GIVEN,
    io_threads: int = 8,
    progress: bool = False,
) -> HotsetDataset:
    """A :class:`HotsetDataset` over a user's map-style ``dataset`` (see the module).

    ``read(i) -> bytes`` with ``decode`` (``"image"``, ``"pil"``, ``"bytes"`` or a
    callable ``(bytes, key)``) caches the stored bytes; without ``read`` the
    item is cached in :mod:`hotset.data.itemcodec`'s encoding. ``sizes`` (bytes
    per index, as ``read`` or the encoding would return) skips the measuring pass,
    and with it the hashes: a loader over the result then needs ``verify=False``.

    ``labels`` (one integer per index) overrides the labels found in
    ``(input, label)`` items; left out, they are those items' labels, else
    torchvision's ``ds.targets`` or ``ds.samples``, else an error naming
    ``labels=`` (never ``-1`` without a word: see :mod:`hotset.torch.userlabels`).
    ``labels=None`` says the data has none: every ``y`` is then ``-1``.
    """
    n = _check_args(dataset, read, decode, io_threads)
    chosen: DecodeSpec | None = check_decode(decode) if decode is not None else None
    # labels are settled before the measuring pass (about one epoch of reads) where it
    # cannot find them, so a missing labels= fails at once, not after that pass
    chosen_labels: np.ndarray | None = None
    if read is not None or sizes is not None or not isinstance(labels, NotGiven):
        chosen_labels = resolve_labels(dataset, labels, None)
    store = ItemStore(dataset, read=read)
    keys = [str(i) for i in range(n)]
    if sizes is not None:
        size_arr = np.asarray(sizes, dtype=np.int64).reshape(-1)
        if len(size_arr) != n or (size_arr < 0).any():
            raise HotsetError(f"sizes must be {n} non-negative byte counts, got {len(size_arr)}")
        hashes = [UNHASHED] * n
        # nothing measured: the first item says whether items are (input, label) pairs,
        # whose x is the input (it was [inputs, labels] before, the whole item collated)
        pair = read is None and _label(dataset[0]) is not None
    else:
        size_arr, hashes, found, pair = _measure(dataset, store, read, io_threads, progress)
        if chosen_labels is None:  # the items' own labels, else derived, else an error
            chosen_labels = resolve_labels(dataset, labels, found)
    assert chosen_labels is not None
    meta: dict[str, Any] = {"source": "user-dataset"}
    if sizes is not None:
        meta[UNHASHED_META] = True  # the loader asks for verify=False (see is_unhashed)
    manifest = Manifest(np.arange(n), keys, size_arr, chosen_labels, hashes, meta=meta)
    if chosen is None:
        chosen = _decode_input if pair else _decode
    from hotset.storage.retry import RetryingStore

    return HotsetDataset(
        manifest=manifest,
        # transient errors of the user's storage are retried, as open_dataset's are
        store=RetryingStore(store, retries=8, deadline_s=60.0),
        decode=chosen,
        transform=transform,
        source=f"{type(dataset).__name__} ({n} items)",
    )


def _measure(
    dataset: Any,
    store: ItemStore,
    read: Callable[[int], bytes] | None,
    io_threads: int,
    progress: bool,
) -> tuple[np.ndarray, list[str], np.ndarray, bool]:
    """Read every index once: sizes, xxh3s, labels, and whether items are (input, label)."""
    n = len(dataset)
    sizes = np.zeros(n, dtype=np.int64)
    hashes = [""] * n
    labels = np.full(n, -1, dtype=np.int64)
    pairs = 0

    def one(i: int) -> tuple[int, int, str, int | None]:
        if read is not None:
            data = store.read(str(i))
            return i, len(data), xxhash.xxh3_64_hexdigest(data), None
        item, data = _encode_index(dataset, i)
        return i, len(data), xxhash.xxh3_64_hexdigest(data), _label(item)

    bar = None
    if progress:
        import sys

        from tqdm import tqdm

        bar = tqdm(total=n, desc="hotset: measuring samples", unit="sample", file=sys.stderr)
    try:
        with ThreadPoolExecutor(io_threads, thread_name_prefix="hotset-measure") as pool:
            for i, size, digest, label in pool.map(one, range(n)):
                sizes[i], hashes[i] = size, digest
                if label is not None:
                    labels[i] = label
                    pairs += 1
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return sizes, hashes, labels, read is None and pairs == n
