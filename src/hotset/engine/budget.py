"""A cache budget: the one limit every policy decides within and every driver enforces.

The planner reads it (sizes, staging bytes) as much as the policies do, so it is
part of the engine's contract rather than of any one policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.errors import HotsetError


@dataclass(frozen=True)
class Budget:
    """A cache budget in bytes and/or items; both limits hold when both are given.

    ``sizes[i]`` is the byte size of sample id ``i``. Without sizes every item
    weighs one byte, so a byte budget and an item budget mean the same thing.
    """

    capacity_bytes: int | None = None
    capacity_items: int | None = None
    sizes: IntArray | None = None
    #: bytes a prefetching policy may hold staged (read, not yet served), outside
    #: the cache's capacity; 0 forbids prefetching
    staging_bytes: int = 0

    def __post_init__(self) -> None:
        if self.capacity_bytes is None and self.capacity_items is None:
            raise HotsetError("budget: give capacity_bytes, capacity_items or both")
        for name in ("capacity_bytes", "capacity_items", "staging_bytes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int | np.integer) or value < 0):
                raise HotsetError(f"budget: {name} must be a non-negative integer, got {value!r}")
        if self.sizes is not None:
            sizes = np.asarray(self.sizes)
            if sizes.ndim != 1 or (sizes.size and sizes.min() < 0):
                raise HotsetError("budget: sizes must be a 1-D array of non-negative byte counts")

    def size_of(self, sid: int) -> int:
        if self.sizes is None:
            return 1
        if sid >= len(self.sizes):
            raise HotsetError(
                f"sample id {sid} has no size (sizes cover ids 0..{len(self.sizes) - 1})"
            )
        return int(self.sizes[sid])

    def fits(self, used_bytes: int, used_items: int) -> bool:
        """Whether a cache holding this much is within budget."""
        if self.capacity_bytes is not None and used_bytes > self.capacity_bytes:
            return False
        return not (self.capacity_items is not None and used_items > self.capacity_items)

    def can_ever_hold(self, sid: int) -> bool:
        return self.fits(self.size_of(sid), 1)


__all__ = ["Budget"]
