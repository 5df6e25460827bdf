"""Read units: ids stored together and read in one storage request.

A unit is a chunk of the dataset's layout (``hotset data pack``; see
:mod:`hotset.data.chunks`) or, later, a package built at run time. The engine
only needs what this protocol names: which ids a unit holds, its store key and
size, and how to cut its bytes into samples. Unit ``u`` is cached under the
cache id ``n + u`` (``n`` samples come first), so a unit's bytes can be cached
whole next to single samples in one key space.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError

IntArray = npt.NDArray[np.int64]


class UnitLayout(Protocol):
    """Sample id -> (unit, offset, length), and the units' store keys."""

    @property
    def n_chunks(self) -> int: ...

    @property
    def chunk_of(self) -> IntArray: ...

    @property
    def chunk_sizes(self) -> IntArray: ...

    @property
    def chunk_keys(self) -> tuple[str, ...]: ...

    @property
    def chunk_hashes(self) -> tuple[str, ...]: ...

    def members(self, c: int) -> IntArray: ...

    def split(self, c: int, blob: bytes) -> dict[int, bytes]: ...


@runtime_checkable
class LocatedLayout(Protocol):
    """A layout that says where each sample lies in its unit's file (partial unit reads)."""

    def locate(self, sid: int) -> tuple[int, int, int]: ...


def member_ranges(layout: object, unit: int, ids: Iterable[int]) -> list[tuple[int, int]]:
    """``(offset, length)`` of each of ``ids`` inside unit ``unit``'s file, in order.

    The byte ranges one partial unit read fetches (``BatchPlan.read_groups``). A
    layout that cannot say where its members lie (packages) cannot be read in
    part: :class:`HotsetError`, as can an id the unit does not hold.
    """
    if not isinstance(layout, LocatedLayout):
        raise HotsetError(
            f"a partial read of unit {unit} needs a chunk layout that locates its members; "
            f"{type(layout).__name__} does not"
        )
    out = []
    for sid in ids:
        c, offset, length = layout.locate(int(sid))
        if c != unit:
            raise HotsetError(f"sample {sid} lies in unit {c}, not in unit {unit}")
        out.append((offset, length))
    return out


class SubsetLayout:
    """A layout seen through some of its ids, renumbered ``0..len(rows)-1``.

    The live simulator trains on a split of the dataset: its ids are the
    training rows renumbered. A unit still holds (and a read still moves) the
    bytes of every sample packed in it; only the training ids are visible.
    """

    def __init__(self, base: UnitLayout, rows: IntArray) -> None:
        self.base = base
        self.rows = np.asarray(rows, dtype=np.int64)
        self._new_of = np.full(len(base.chunk_of), -1, dtype=np.int64)
        self._new_of[self.rows] = np.arange(len(self.rows), dtype=np.int64)
        self._members: dict[int, IntArray] = {}
        self._chunk_of = np.asarray(base.chunk_of, dtype=np.int64)[self.rows]

    @property
    def n_chunks(self) -> int:
        return self.base.n_chunks

    @property
    def chunk_of(self) -> IntArray:
        return self._chunk_of

    @property
    def chunk_sizes(self) -> IntArray:
        return self.base.chunk_sizes

    @property
    def chunk_keys(self) -> tuple[str, ...]:
        return self.base.chunk_keys

    @property
    def chunk_hashes(self) -> tuple[str, ...]:
        return self.base.chunk_hashes

    def members(self, c: int) -> IntArray:
        got = self._members.get(c)
        if got is None:
            mapped = self._new_of[self.base.members(c)]
            got = self._members[c] = mapped[mapped >= 0]
        return got

    def locate(self, sid: int) -> tuple[int, int, int]:
        """(unit, offset, length) of training id ``sid``, from the base layout."""
        base = self.base
        if not isinstance(base, LocatedLayout):
            raise HotsetError(
                f"a partial unit read needs a layout that locates its members; "
                f"{type(base).__name__} does not"
            )
        return base.locate(int(self.rows[sid]))

    def split(self, c: int, blob: bytes) -> dict[int, bytes]:
        new_of = self._new_of
        return {
            int(new_of[old]): part
            for old, part in self.base.split(c, blob).items()
            if new_of[old] >= 0
        }
