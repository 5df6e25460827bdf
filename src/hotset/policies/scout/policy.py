"""Scout: the importance sampler's order, untouched, with its I/O batched by chunk.

The order is whatever the sampler drew (a uniform permutation of the ids it
kept): Scout never reorders, substitutes or skips, so training sees exactly
the sampler's order and keeps exactly its convergence. Only the reads change.

Looking ahead
-------------
The policy is told the epoch's planned order (``begin_epoch``). At a miss of
id ``s`` at position ``p``, whose chunk is ``c``, it issues ONE request for
``c``'s file that fetches ``s`` and every member of ``c`` the order asks for
in the next ``horizon`` positions (nearest first), each only by its byte range
(``Decision.group``; a vector of ranges, :mod:`hotset.storage.ranges`). The
fetched members are admitted to the cache and served as exact hits when their
turn comes, so a chunk costs one request per ``horizon`` stretch of the epoch
instead of one per member, and no byte is read that the order does not train.

``horizon`` is ``lookahead`` times the samples the cache holds: a member
fetched ahead waits on average half the horizon, so the cache holds about
``lookahead / 2`` of its capacity in fetched-ahead members, and a request
brings about ``1 + chunk_size * horizon / n`` members. A chunk's first window
of an epoch is a share of the horizon of its own (:func:`_stagger`), so that
the chunks' windows do not all renew together.

Across epochs
-------------
When the next epoch's permutation is previewed (:meth:`Scout.set_preview`; the
system previews as far as the horizon by default), the lookahead reads on past
the epoch's end, so the windows requested late in an epoch reach into the next
one and end there at positions as spread as their requests were. A chunk whose
window ends inside the preview keeps that window next epoch: its first request
there is a whole horizon, not a staggered share. The fetched-ahead stock then
stays level across the boundary instead of draining and being rebuilt by a
burst of one request per chunk (a planner replay of the loader bench, 4,000
samples, chunk 64, 20% cache, 4 epochs: an 8-batch preview made 885 requests,
30 of them in the batch after the preview; the horizon's, 753, at most 10 in any
batch after the first epoch). A window cut at the preview's end is staggered
again, since every such chunk would renew at once. Which chunks keep their window
is part of the saved state.

A cold cache (nothing resident, no window carried over) has no stock at all, so
its horizon grows over its first epoch from ``ramp`` of its length (:meth:`Scout._window`).

What leaves the cache for a fetched member (never a fetched-ahead member
whose turn has not come: its bytes would be wasted):

1. an *idle* id: resident, and not asked for again this epoch; the least
   important first (its latest importance score), since the importance
   sampler is least likely to draw it next epoch;
2. else a *carried* id: resident from an earlier epoch (or already served
   this one) and asked for again later than the member is: the one asked for
   farthest ahead first (Belady's rule within the epoch). Reading it again at
   its turn costs a request, not waste: its bytes are then trained.

If neither frees room the member is left for a later request. Ids left
resident at the epoch's end are hits in the next epoch if the sampler draws
them again.

An access that is not the planned order's next id (the order was not
announced, or a driver replays another trace) is served from the cache if
resident, else read alone, and changes nothing (``off_plan``).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.policy import Policy
from hotset.engine.state_ids import state_ids
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError

#: next use of an id that is not asked for again this epoch
NEVER = 1 << 62
_COUNTS = (
    "group_reads",  # ranged requests (or whole-chunk reads when ranged=False)
    "single_reads",  # misses read alone (no member fetched with them)
    "fetched_ahead",  # members fetched ahead of their turn
    "idle_evictions",
    "carried_evictions",
    "off_plan",
)


class Scout(Policy):
    """The planned order's misses fetched in chunk-ranged requests; see the module docstring."""

    name: ClassVar[str] = "scout"
    capabilities: ClassVar[Capabilities] = Capabilities(reads_units=True)

    def __init__(
        self,
        budget: Budget,
        *,
        seed: int = 0,
        lookahead: float = 1.8,
        ranged: bool = True,
        stagger: bool = True,
        preview: int | None = 0,
        ramp: float = 1.0,
    ) -> None:
        super().__init__(budget, seed=seed)
        self.lookahead = float(lookahead)
        self.ranged = bool(ranged)
        self.stagger = bool(stagger)
        #: a cold cache's horizon starts at this share of the full one (see _window)
        self.ramp = float(ramp)
        self._ramp_len = 0
        #: positions of the next epoch's order the lookahead may see (see set_preview);
        #: None: as far as the horizon reaches (set with the layout)
        self._preview_option = preview
        self.preview = 0 if preview is None else int(preview)
        self._next_epoch: list[int] = []
        #: chunks whose latest window reached into the previewed next epoch: their
        #: window goes on there, so their first request next epoch is not staggered
        self._spilled: set[int] = set()
        self.horizon = 0
        self.counts: dict[str, int] = dict.fromkeys(_COUNTS, 0)
        self._resident: dict[int, None] = {}
        #: byte size per id (the budget's, as a list: read once per fetched member)
        self._size: list[int] = []
        self._scores: npt.NDArray[np.float64] | None = None
        self._n = 0
        self._reset_plan(None)

    # -- the plan of the epoch ----------------------------------------------------
    def attach_layout(self, layout: UnitLayout | None) -> None:
        """The chunk layout; the horizon follows from the cache's capacity in samples."""
        super().attach_layout(layout)
        if layout is None:
            return
        self._n = n = len(layout.chunk_of)
        self._size = sizes = [self.budget.size_of(i) for i in range(n)]
        mean = max(1.0, sum(sizes) / max(1, n))
        cap = self.budget.capacity_bytes
        slots = int(cap / mean) if cap is not None else n
        if self.budget.capacity_items is not None:
            slots = min(slots, self.budget.capacity_items)
        self.horizon = int(self.lookahead * slots)
        if self._preview_option is None:
            self.preview = self.horizon

    def set_preview(self, ids: IntArray) -> None:
        """The next epoch's likely order (a superset: the sampler's permutation before
        its selection), told before :meth:`begin_epoch`.

        The lookahead of the epoch's last windows then reaches its first ``preview``
        positions (the horizon, with ``preview=None``), so the next epoch does not
        start with one request per chunk at once. An id previewed but not drawn next
        epoch is bytes read for nothing.
        """
        self._next_epoch = [int(i) for i in ids[: self.preview]] if self.preview else []

    def _reset_plan(self, planned: IntArray | None) -> None:
        self._order: list[int] = [] if planned is None else [int(i) for i in planned]
        #: what the lookahead sees: the order, then the previewed start of the next epoch
        self._seq: list[int] = self._order + self._next_epoch if self._order else []
        self._pos = 0
        self._next_pos: list[int] = []  # per position: the same id's next position
        self._next_use: dict[int, int] = {}  # id -> its next position (absent: NEVER)
        self._chunk_pos: dict[int, list[int]] = {}  # chunk -> positions of its members
        self._chunk_ptr: dict[int, int] = {}
        # chunks read this epoch (their first window done), or whose window goes on from
        # the last epoch's preview
        self._fetched: set[int] = self._spilled if planned is not None else set()
        self._spilled = set()
        self._fresh: set[int] = set()  # fetched ahead, their turn not come yet
        self._idle: list[tuple[float, int]] = []
        self._carried: list[tuple[int, int]] = []

    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        """Index the planned order: next uses, each chunk's positions, what may leave."""
        super().begin_epoch(epoch, planned)
        # a cold start (nothing resident, no window going on): the horizon grows over
        # this epoch, so the fetched-ahead stock is not all read before batch 0
        cold = not self._resident and not self._spilled
        self._reset_plan(planned)
        self._ramp_len = len(self._order) if cold and self.ramp < 1.0 else 0
        order = self._seq
        if order and self.layout is not None:
            last: dict[int, int] = {}
            nxt = [NEVER] * len(order)
            for p in range(len(order) - 1, -1, -1):
                sid = order[p]
                nxt[p] = last.get(sid, NEVER)
                last[sid] = p
            self._next_pos, self._next_use = nxt, last
            chunk_of = self.layout.chunk_of
            for p, c in enumerate(np.asarray(chunk_of)[np.asarray(order)].tolist()):
                self._chunk_pos.setdefault(c, []).append(p)
            self._chunk_ptr = dict.fromkeys(self._chunk_pos, 0)
        for sid in self._resident:
            self._release(sid)

    def _release(self, sid: int) -> None:
        """``sid`` (resident, its pending use served or none) may leave: idle or carried."""
        nu = self._next_use.get(sid, NEVER)
        if nu == NEVER:
            score = 0.0 if self._scores is None else float(self._scores[sid])
            heapq.heappush(self._idle, (score, sid))
        else:
            heapq.heappush(self._carried, (-nu, sid))

    def update_importance(self, scores: npt.NDArray[np.float64], version: int = 0) -> None:
        """The latest importance: which idle id leaves first."""
        top = float(np.finfo(np.float64).max)  # unknown (never trained): leaves last
        self._scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=top, posinf=top)

    # -- decisions ----------------------------------------------------------------
    def access(self, sid: int) -> Decision:
        sid = int(sid)
        p = self._pos
        if p >= len(self._order) or self._order[p] != sid:
            return self._off_plan(sid)
        self._pos += 1
        self._next_use[sid] = nu = self._next_pos[p]
        if nu == NEVER:
            del self._next_use[sid]
        if sid in self._resident:
            self._fresh.discard(sid)
            self._release(sid)
            return Decision(sid, Outcome.HIT, sid)
        return self._fetch(sid, p)

    def _off_plan(self, sid: int) -> Decision:
        self.counts["off_plan"] += 1
        if sid in self._resident:
            return Decision(sid, Outcome.HIT, sid)
        self.counts["single_reads"] += 1
        return Decision(sid, Outcome.MISS, sid)

    def _fetch(self, sid: int, p: int) -> Decision:
        """A miss at position ``p``: one request for ``sid`` and its chunk's members due soon."""
        assert self.layout is not None
        c = int(self.layout.chunk_of[sid])
        admitted: list[int] = []
        evicted: list[int] = []
        size = self._size
        for q, m in self._due_members(c, p):
            if not self._make_room(size[m], q, evicted):
                break
            self._admit(m)
            admitted.append(m)
        self_admitted = sid in self._fresh
        others = tuple(m for m in admitted if m != sid)
        if not others:
            self.counts["single_reads"] += 1
            if self.ranged:
                return Decision(sid, Outcome.MISS, sid, self_admitted, tuple(evicted))
        else:
            self.counts["group_reads"] += 1
            self.counts["fetched_ahead"] += len(others)
        if not self.ranged:  # the ablation: the whole chunk, one request
            return Decision(
                sid, Outcome.MISS, sid, self_admitted, tuple(evicted), c, also_admitted=others
            )
        return Decision(
            sid, Outcome.MISS, sid, self_admitted, tuple(evicted), also_admitted=others, group=c
        )

    def _due_members(self, c: int, p: int) -> list[tuple[int, int]]:
        """(position, id) of chunk ``c``'s members asked for in (p, p + horizon], not
        resident, each id once, nearest first."""
        positions = self._chunk_pos.get(c, [])
        ptr = self._chunk_ptr.get(c, 0)
        while ptr < len(positions) and positions[ptr] <= p:
            ptr += 1
        self._chunk_ptr[c] = ptr
        horizon = self._window(p)
        end = p + horizon
        if (
            self.stagger and c not in self._fetched
        ):  # stagger: the first window is a chunk's own share of one
            self._fetched.add(c)
            end = p + int(horizon * _stagger(c, self.epoch))
        if end >= len(self._order):  # the window reaches into the previewed next epoch
            if end < len(self._seq):
                self._spilled.add(c)  # and ends there: it goes on next epoch
            else:
                self._spilled.discard(c)  # cut at the preview's end, as every chunk's is
        out: list[tuple[int, int]] = []
        seen: set[int] = set()
        order, resident = self._seq, self._resident
        for q in positions[ptr:]:
            if q > end:
                break
            m = order[q]
            if m not in resident and m not in seen:
                seen.add(m)
                out.append((q, m))
        return out

    def _window(self, p: int) -> int:
        """The horizon at position ``p``: the full one, or on a cold start a share growing
        from ``ramp`` at the epoch's start to 1 at its end.

        Why: the fetched-ahead stock (about half the horizon) has to be read before
        the members it holds are trained, and a cold cache has none, so without the
        ramp the first batches wait for all of it while every sample is a miss and the
        link has least to spare. Growing the horizon over the first epoch reads the
        stock a little at a time, for some extra requests in that epoch.
        """
        if not self._ramp_len:
            return self.horizon
        share = self.ramp + (1.0 - self.ramp) * min(1.0, p / self._ramp_len)
        return int(self.horizon * share)

    def _make_room(self, size: int, q: int, evicted: list[int]) -> bool:
        """Evict idle, then carried ids used after ``q``, until ``size`` bytes fit."""
        budget = self.budget
        if not budget.fits(size, 1):
            return False  # it never fits: read it at its turn, alone
        while not budget.fits(self.used_bytes + size, self.used_items + 1):
            victim = self._pop_idle()
            kind = "idle_evictions"
            if victim is None:
                victim, kind = self._pop_carried(q), "carried_evictions"
            if victim is None:
                return False
            self._evict(victim)
            evicted.append(victim)
            self.counts[kind] += 1
        return True

    def _pop_idle(self) -> int | None:
        idle = self._idle
        while idle:
            _, sid = heapq.heappop(idle)
            if sid in self._resident and sid not in self._next_use:
                return sid
        return None

    def _pop_carried(self, q: int) -> int | None:
        carried = self._carried
        while carried:
            neg, sid = carried[0]
            if not (sid in self._resident and sid not in self._fresh):
                heapq.heappop(carried)
                continue
            if self._next_use.get(sid, NEVER) != -neg:
                heapq.heappop(carried)  # stale: its next use moved on
                continue
            if -neg <= q:
                return None  # every carried id is needed before the member is
            heapq.heappop(carried)
            return sid
        return None

    def _admit(self, sid: int) -> None:
        self._resident[sid] = None
        self._fresh.add(sid)
        self.used_bytes += self._size[sid]
        self.used_items += 1

    def _evict(self, sid: int) -> None:
        del self._resident[sid]
        self.used_bytes -= self._size[sid]
        self.used_items -= 1

    # -- what the cache holds -----------------------------------------------------
    def __contains__(self, sid: object) -> bool:
        return sid in self._resident

    def resident(self) -> frozenset[int]:
        return frozenset(self._resident)

    def summary(self) -> dict[str, Any]:
        return {
            "horizon": self.horizon,
            "ranged": self.ranged,
            "preview": self.preview,
            **self.counts,
        }

    # -- resumption (state at an epoch boundary; the planner replays the rest) -------
    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "resident": list(self._resident),
            "scores": None if self._scores is None else self._scores.tolist(),
            "counts": dict(self.counts),
            "spilled": sorted(self._spilled),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        try:
            sizes = self.budget.sizes
            n = None if sizes is None else len(sizes)
            resident = state_ids(state["resident"], n, "scout state: resident").tolist()
            scores = state["scores"]
            counts = {k: int(state["counts"][k]) for k in _COUNTS}
            epoch = int(state["epoch"])
            spilled = {int(c) for c in state.get("spilled", ())}  # absent: saved before it
        except (KeyError, TypeError, ValueError) as exc:
            raise HotsetError(
                f"scout: a malformed state ({exc!r}); it was not saved by scout"
            ) from None
        self._resident = dict.fromkeys(resident)
        self.used_bytes = sum(self.budget.size_of(i) for i in resident)
        self.used_items = len(resident)
        if not self.budget.fits(self.used_bytes, self.used_items):
            raise HotsetError(
                f"scout: the saved cache holds {self.used_bytes} bytes, over this budget "
                f"({self.budget.capacity_bytes}); resume with the budget it was saved with"
            )
        self._scores = None if scores is None else np.asarray(scores, dtype=np.float64)
        self.counts = counts
        self.epoch = epoch
        self._reset_plan(None)
        self._spilled = spilled


def _stagger(c: int, epoch: int) -> float:
    """Chunk ``c``'s first window this epoch, as a share of the horizon, in (0, 1].

    Without it every chunk's first miss falls in the epoch's first few batches and
    all windows renew together: the fetched-ahead members peak at the whole horizon
    (over the cache, so windows are cut short) and then drain. Shares spread evenly
    (a golden-ratio sequence, shifted per epoch) keep them near half the horizon.
    """
    return 1.0 - ((c + 1) * 0.6180339887498949 + epoch * 0.5) % 1.0


__all__ = ["NEVER", "Scout"]
