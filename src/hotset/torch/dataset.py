"""What a user opens: a manifest, the store holding its bytes, and how to decode them."""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hotset.data.chunks import ChunkLayout
from hotset.data.ids import subset_ids
from hotset.data.manifest import Manifest
from hotset.errors import HotsetError
from hotset.storage.base import Store

DecodeSpec = str | Callable[[bytes, str], Any]
DECODE_MODES = ("image", "bytes", "pil", "pil-keep")


def decode_sample(
    decode: DecodeSpec, transform: Callable[[Any], Any] | None, data: bytes, key: str
) -> Any:
    """One sample's bytes as training sees them: decoded, then transformed.

    ``"image"`` gives a float32 ``C,H,W`` tensor in [0, 1]; ``"pil"`` an RGB
    ``PIL.Image`` (what torchvision-style transforms expect), ``"pil-keep"`` a
    ``PIL.Image`` in the file's own mode, ``"bytes"`` the bytes themselves, a
    callable whatever it returns for ``(bytes, key)``.
    The loader's workers and ``HotsetDataset[i]`` both decode here, so a cached
    sample and a freshly read one become the same object.
    """
    if decode == "bytes":
        out: Any = data
    elif decode == "image":
        import torch

        from hotset.data.decode import decode as decode_image

        out = torch.from_numpy(decode_image(data, key))
    elif decode == "pil" or decode == "pil-keep":
        out = _pil(data, key, keep_mode=decode == "pil-keep")
    else:
        assert callable(decode)
        out = decode(data, key)
    return transform(out) if transform is not None else out


def _pil(data: bytes, key: str, *, keep_mode: bool) -> Any:
    """A ``PIL.Image``: RGB, as torchvision's default loader (``pil_loader``) gives it.

    Why RGB by default: a torchvision pipeline written for ``ImageFolder``
    (``Normalize`` with three means, a model with three input channels) expects
    three channels whatever the file holds, and a grayscale or palette file kept
    as it is fails there with a shape mismatch, far from the cause.
    ``keep_mode`` (``decode="pil-keep"``) keeps the file's mode (L, P, RGBA, I;16).
    """
    import io

    from PIL import Image

    name = "pil-keep" if keep_mode else "pil"
    try:
        image = Image.open(io.BytesIO(data))
        image.load()  # decode now: a lazy image would read from a buffer that is gone
        return image if keep_mode else image.convert("RGB")
    except Exception as exc:
        raise HotsetError(f"cannot decode {key!r} as an image for decode={name!r}: {exc}") from None


def check_decode(decode: object) -> DecodeSpec:
    if callable(decode):
        return decode
    if decode not in DECODE_MODES:
        raise HotsetError(
            f"decode must be one of {', '.join(DECODE_MODES)} or a callable(bytes, key), "
            f"got {decode!r}"
        )
    assert isinstance(decode, str)
    return decode


@dataclass(frozen=True)
class HotsetDataset:
    """A dataset the loader can read: ``manifest`` ids ``0..N-1`` with keys into ``store``.

    ``decode`` is ``"image"`` (PNG/JPEG/NPY to a float32 ``C,H,W`` tensor in
    [0, 1], via :func:`hotset.data.decode.decode`), ``"pil"`` (an RGB ``PIL.Image``
    as torchvision's loader gives it; ``"pil-keep"``: in the file's own mode,
    for torchvision-style transforms), ``"bytes"`` (the raw bytes; a batch's
    ``x`` is then a list of ``bytes``) or a callable ``(bytes, key)``.
    ``transform`` is applied to each decoded sample (for ``"image"``, a tensor).
    ``layout`` lets systems that read whole chunks (one request per chunk) run.

    It is a map-style dataset too: ``data[i]`` is ``(sample, label)``, read
    from the store and checked against the manifest, so it can feed a plain
    ``DataLoader`` (:func:`hotset.eval_loader` does, for validation).
    """

    manifest: Manifest
    store: Store
    decode: DecodeSpec = "image"
    transform: Callable[[Any], Any] | None = None
    source: str = ""
    #: the chunk layout written by ``hotset data pack``, if the dataset was packed
    layout: ChunkLayout | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.manifest, Manifest):
            raise HotsetError(f"manifest: expected a Manifest, got {self.manifest!r:.80}")
        if not isinstance(self.store, Store):
            raise HotsetError(f"store: expected a Store, got {self.store!r:.80}")
        check_decode(self.decode)
        if self.transform is not None and not callable(self.transform):
            raise HotsetError(f"transform must be callable, got {self.transform!r:.80}")

    def __len__(self) -> int:
        return len(self.manifest)

    def __getitem__(self, index: int) -> tuple[Any, int]:
        """``(sample, label)`` of id ``index``: read, checked (size and xxh3), decoded."""
        import xxhash

        from hotset.errors import IntegrityError

        n = len(self.manifest)
        if isinstance(index, bool):
            raise TypeError(f"sample index must be an integer, got {index!r}")
        index = operator.index(index)  # numpy integers too; TypeError for anything else
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"sample index {index} out of range for {n} samples")
        key = self.manifest.keys[index]
        data = self.store.read(key)
        size, digest = int(self.manifest.sizes[index]), self.manifest.hashes[index]
        if len(data) != size or xxhash.xxh3_64_hexdigest(data) != digest:
            raise IntegrityError(
                f"{key!r} (id {index}): the store returned {len(data)} bytes hashing to "
                f"{xxhash.xxh3_64_hexdigest(data)}, the manifest says {size} bytes, {digest}"
            )
        label = int(self.manifest.labels[index])
        return decode_sample(self.decode, self.transform, data, key), label

    def subset(self, indices: Any) -> HotsetDataset:
        """The samples ``indices`` (in that order) as a data set of their own, ids ``0..k-1``.

        Same files, same store, no copy: for a validation split or a quick run on
        part of the data. The chunk layout is dropped (chunks would mix kept and
        left-out samples); pack the subset on disk if a chunk-reading system needs one.
        """
        import numpy as np

        idx = subset_ids(indices, len(self.manifest))
        m = self.manifest
        keys, hashes = m.keys, m.hashes
        manifest = Manifest(
            np.arange(len(idx)),
            [keys[i] for i in idx.tolist()],
            m.sizes[idx],
            m.labels[idx],
            [hashes[i] for i in idx.tolist()],
            meta={k: v for k, v in m.meta.items() if k != "num_samples"},
        )
        return replace(self, manifest=manifest, layout=None, source=f"{self.source}[subset]")

    def with_store(self, store: Store) -> HotsetDataset:
        """The same dataset read through another store (e.g. a throttled wrapper)."""
        return replace(self, store=store)


def _check_location(location: object) -> None:
    """Only a str or an os.PathLike of str names a data set; anything else is named."""
    if isinstance(location, str):
        return
    if isinstance(location, os.PathLike) and isinstance(os.fspath(location), str):
        return
    raise HotsetError(
        "open_dataset: location must be a data set directory, a manifest .csv path or a URL "
        f"(a str or os.PathLike), got {location!r:.80} ({type(location).__name__})"
    )


def _check_retry_options(retries: object, deadline_s: object, timeout_s: object) -> None:
    """Reject bad retry options by the names ``open_dataset`` gives them."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise HotsetError(f"retries: must be an integer >= 0, got {retries!r}")
    for name, value, optional in (
        ("read_deadline_s", deadline_s, False),
        ("read_timeout_s", timeout_s, True),
    ):
        if value is None and optional:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0 < float(value) < math.inf
        ):
            raise HotsetError(f"{name}: must be a finite number of seconds > 0, got {value!r}")


def open_dataset(
    location: str | os.PathLike[str],
    *,
    decode: DecodeSpec = "image",
    transform: Callable[[Any], Any] | None = None,
    store: Store | None = None,
    retries: int = 8,
    read_deadline_s: float = 60.0,
    read_timeout_s: float | None = None,
) -> HotsetDataset:
    """Open a dataset directory, manifest csv or URL (``file://``, ``memory://``, ``s3://``).

    ``store`` overrides the store the manifest's keys are read from (it must
    hold the same keys), e.g. to wrap it in a throttle for a benchmark.

    Reads are retried by default: the store (found or given) is wrapped in a
    :class:`~hotset.storage.retry.RetryingStore` with ``retries`` retries per
    read, ``read_deadline_s`` seconds at most per read, and, when
    ``read_timeout_s`` is set, each attempt abandoned after that many seconds.
    It is on by default because shared storage fails transiently now and then
    (a dropped connection, a throttled request), and without retries one such
    error ends a run of many hours; a healthy store pays almost nothing for it
    (one function call per read). Errors that do escape are a
    :class:`~hotset.errors.StorageError` naming the key and the store. Pass
    ``retries=0`` (with ``read_timeout_s=None``) to read the store unwrapped; a
    ``store`` that is already a ``RetryingStore`` is kept as given.
    Set ``read_timeout_s`` for a store whose reads can hang: without it, a hung
    read waits forever.
    """
    from hotset.data import open_dataset as open_manifest
    from hotset.data.chunks import load_layout
    from hotset.storage.retry import RetryingStore

    _check_location(location)
    decode = check_decode(decode)
    if store is not None and not isinstance(store, Store):
        raise HotsetError(f"store: expected a Store, got {store!r:.80}")
    _check_retry_options(retries, read_deadline_s, read_timeout_s)  # before any I/O
    manifest, found = open_manifest(location)
    chosen = store if store is not None else found
    if (retries != 0 or read_timeout_s is not None) and not isinstance(chosen, RetryingStore):
        chosen = RetryingStore(
            chosen, retries=retries, deadline_s=read_deadline_s, timeout_s=read_timeout_s
        )
    return HotsetDataset(
        manifest=manifest,
        store=chosen,
        decode=decode,
        transform=transform,
        source=os.fspath(location),
        layout=load_layout(location, manifest=manifest),
    )
