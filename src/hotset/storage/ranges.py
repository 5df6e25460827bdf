"""Ranged reads: several byte ranges of one stored file, fetched in one request.

Why: a chunk of ``hotset data pack`` holds 64 samples, and a system that needs
only some of them (the ones its order asks for soon) should neither pay a
request per sample (the per-request floor of single-sample systems) nor move
the whole chunk (the wasted bytes of whole-chunk systems). A *vector* of byte
ranges of one file is the middle ground: ``os.pread`` per range on one open
file descriptor locally, ``fs.cat_ranges`` through fsspec remotely.

How requests are counted, honestly:

* :class:`~hotset.storage.local.LocalStore` opens the file once and reads each
  range with ``pread``: one request (one open), its bytes the ranges' bytes;
* :class:`~hotset.storage.s3_store.S3Store` and
  :class:`~hotset.storage.fsspec_store.FsspecStore`: object stores (S3, GCS,
  HTTP) answer one range per GET (S3 answers a multi-range ``Range`` header
  with the whole object), so they make, and count, one request per *coalesced*
  range (ranges that touch are merged first);
* the throttled models charge one request (one latency) moving the ranges'
  bytes: a store that answers a vector of ranges in one round trip (a
  multi-range GET, NFS's pipelined reads, ``preadv``);
* any other store (a user's Dataset, a test double) has no ranged read: the
  whole file is read and sliced, and counted as the whole read it is.

:func:`range_requests` tells, before reading, how many requests a ranged read
of a store will make (a store's ``range_requests`` method, through wrappers
that delegate it, else one), so the loader's report counts the GETs an object
store really answered, not one per partial unit read.

A range is ``(offset, length)`` with ``offset >= 0`` and ``length >= 0``. A
range past the end of the file returns fewer bytes (as ``pread`` does); the
caller checks what it got (the loader checks every sample against the
manifest's size and hash).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hotset.errors import HotsetError

#: (offset, length) in bytes within one stored file
Range = tuple[int, int]


@runtime_checkable
class RangedStore(Protocol):
    """A store that reads several byte ranges of one key in one request."""

    def read_ranges(self, key: str, ranges: Sequence[Range]) -> list[bytes]: ...


def check_ranges(key: str, ranges: Sequence[Range]) -> list[Range]:
    """``ranges`` as a list of int pairs, or a :class:`HotsetError` naming the bad one."""
    out: list[Range] = []
    for item in ranges:
        try:
            offset, length = item
        except (TypeError, ValueError):
            raise HotsetError(
                f"ranged read of {key!r}: {item!r} is not an (offset, length) pair"
            ) from None
        if (
            isinstance(offset, bool)
            or isinstance(length, bool)
            or not isinstance(offset, int)
            or not isinstance(length, int)
            or offset < 0
            or length < 0
        ):
            raise HotsetError(
                f"ranged read of {key!r}: range {item!r} must be two integers "
                "offset >= 0 and length >= 0"
            )
        out.append((int(offset), int(length)))
    return out


def coalesce(ranges: Sequence[Range]) -> list[Range]:
    """The ranges sorted, with ranges that touch or overlap merged (fewer GETs)."""
    merged: list[list[int]] = []
    for offset, length in sorted(ranges):
        if merged and offset <= merged[-1][0] + merged[-1][1]:
            end = max(merged[-1][0] + merged[-1][1], offset + length)
            merged[-1][1] = end - merged[-1][0]
        else:
            merged.append([offset, length])
    return [(o, n) for o, n in merged]


def slice_ranges(data: bytes, ranges: Sequence[Range]) -> list[bytes]:
    """Each range of ``data`` (short where it runs past the end)."""
    return [data[offset : offset + length] for offset, length in ranges]


def range_requests(store: object, ranges: Sequence[Range]) -> int:
    """The requests :func:`read_ranges` of ``store`` makes for ``ranges`` (see the module):
    the store's own answer where it has a ``range_requests`` method, else one."""
    count = getattr(store, "range_requests", None)
    if count is None:
        return 1
    return int(count(check_ranges("range_requests", ranges)))


def read_ranges(store: object, key: str, ranges: Sequence[Range]) -> list[bytes]:
    """The bytes of each range of ``key``, in the order given.

    One request on a store with a ranged read (:class:`RangedStore`); on any
    other store the whole file, sliced (and counted by that store as the whole
    read it is).
    """
    checked = check_ranges(key, ranges)
    if isinstance(store, RangedStore):
        return store.read_ranges(key, checked)
    read = getattr(store, "read", None)
    if read is None:
        raise HotsetError(f"ranged read of {key!r}: {store!r} is not a store")
    return slice_ranges(read(key), checked)


__all__ = [
    "Range",
    "RangedStore",
    "check_ranges",
    "coalesce",
    "range_requests",
    "read_ranges",
    "slice_ranges",
]
