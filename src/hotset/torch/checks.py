"""Construction-time checks: fail before the first batch, with the culprit named."""

from __future__ import annotations

from typing import Any

import numpy as np

from hotset.data.manifest import Manifest
from hotset.errors import HotsetError
from hotset.storage.base import Store
from hotset.units import format_bytes

#: how many keys a sampled manifest check looks at
SAMPLE_KEYS = 1000
CHECK_MODES = ("auto", "full", "sample", "off")


def _is_local(store: Any) -> bool:
    from hotset.storage.local import LocalStore

    seen = 0
    while store is not None and seen < 8:  # unwrap throttles and other wrappers
        if isinstance(store, LocalStore):
            return True
        store = getattr(store, "inner", None)
        seen += 1
    return False


def check_manifest_matches_store(
    manifest: Manifest, store: Store, *, mode: str = "auto", seed: int = 0
) -> int:
    """Check that every key (``full``) or a seeded sample of 1000 keys exists with its size.

    ``auto`` is ``full`` for a local store (a stat per key) and ``sample`` for
    remote ones, where one metadata request per key would cost minutes. Returns
    how many keys were checked.
    """
    if mode not in CHECK_MODES:
        raise HotsetError(f"check_store must be one of {', '.join(CHECK_MODES)}, got {mode!r}")
    if mode == "off":
        return 0
    if mode == "auto":
        mode = "full" if _is_local(store) else "sample"
    n = len(manifest)
    if mode == "full" or n <= SAMPLE_KEYS:
        ids = np.arange(n)
    else:
        ids = np.sort(np.random.default_rng([seed, 0x5A3B1E]).choice(n, SAMPLE_KEYS, replace=False))
    keys, sizes = manifest.keys, manifest.sizes
    for sid in ids.tolist():
        key = keys[sid]
        try:
            size = store.size(key)
        except (HotsetError, FileNotFoundError, OSError):
            raise HotsetError(
                f"manifest does not match the store: key {key!r} (id {sid}) is missing "
                f"from {store!r}"
            ) from None
        if size != int(sizes[sid]):
            raise HotsetError(
                f"manifest does not match the store: key {key!r} (id {sid}) has {size} bytes "
                f"in {store!r}, the manifest says {int(sizes[sid])}"
            )
    return len(ids)


def bytes_one_batch_needs(sizes: np.ndarray, batch_size: int) -> int:
    """The bytes of the ``batch_size`` largest samples: what one batch may need to hold."""
    k = min(batch_size, len(sizes))
    if k == 0:
        return 0
    return int(np.partition(np.asarray(sizes, dtype=np.int64), len(sizes) - k)[-k:].sum())


def check_budget(capacity: int, sizes: np.ndarray, batch_size: int, *, shares: int = 1) -> None:
    """Refuse a budget that cannot hold one batch; ``shares``: the local ranks that split
    a node's cache, ``capacity`` being this rank's share (the error says so)."""
    need = bytes_one_batch_needs(sizes, batch_size)
    if capacity < need:
        what = f"cache budget {capacity} bytes ({format_bytes(capacity)})"
        if shares > 1:
            what = (
                f"this rank's share of the node's cache, {capacity} bytes "
                f"({format_bytes(capacity)}: 1/{shares}, one share per local rank),"
            )
            need_all = f"{need * shares} bytes for the node"
        else:
            need_all = "at least that"
        raise HotsetError(
            f"{what} is smaller than one batch needs: the {min(batch_size, len(sizes))} "
            f"largest samples take {need} bytes ({format_bytes(need)}); give a cache of "
            f"{need_all}, or a smaller batch_size"
        )
