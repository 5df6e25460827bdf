"""What a Quiver job holds in the cache, and its books: the ids, their bytes and count.

Every admission and eviction goes through :class:`Holdings`, so the resident set,
the bytes it holds (which the engine checks against the budget after each access)
and the epoch's view of unused residents (:class:`~hotset.policies.quiver.epoch.EpochView`,
which tells the chunk cycle when a chunk is consumed) never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hotset.engine.budget import Budget
from hotset.policies.quiver.epoch import EpochView


class Holdings:
    """The job's resident ids, their bytes and items, and the current epoch's view."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.ids: set[int] = set()
        self.used_bytes = 0
        self.used_items = 0
        #: the current epoch's view (None before the first epoch and after a restart)
        self.view: EpochView | None = None

    def __contains__(self, sid: object) -> bool:
        return sid in self.ids

    def fitting(self, members: Sequence[int]) -> list[int] | None:
        """``members`` not held yet, if they fit beside what is held; else None."""
        fresh = [s for s in members if s not in self.ids]
        add_b = sum(self.budget.size_of(s) for s in fresh)
        fits = self.budget.fits(self.used_bytes + add_b, self.used_items + len(fresh))
        return fresh if fits else None

    def admit(self, sids: list[int]) -> None:
        """Hold ``sids`` (the epoch's view sees those it still plans)."""
        for sid in sids:
            self.ids.add(sid)
            self.used_bytes += self.budget.size_of(sid)
            self.used_items += 1
        assert self.view is not None
        self.view.add_residents(sids)

    def evict(self, sid: int) -> None:
        """Stop holding ``sid``."""
        self.ids.discard(sid)
        self.used_bytes -= self.budget.size_of(sid)
        self.used_items -= 1
        assert self.view is not None
        self.view.drop_resident(sid)

    def clear(self) -> list[int]:
        """Hold nothing, with no view (a restart of the cache); what was held, sorted."""
        dropped = sorted(self.ids)
        self.ids = set()
        self.used_bytes = self.used_items = 0
        self.view = None
        return dropped

    def restore(self, ids: Iterable[int]) -> None:
        """Hold exactly ``ids`` (a saved state's), their books recounted."""
        self.ids = {int(s) for s in ids}
        self.used_bytes = sum(self.budget.size_of(s) for s in self.ids)
        self.used_items = len(self.ids)
