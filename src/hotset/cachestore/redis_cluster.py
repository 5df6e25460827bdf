"""Puts and deletes on a Redis Cluster: a counter kept beside the writes, repaired when unsure.

redis-py's cluster pipeline cannot route ``EVAL``, and one script cannot touch
keys of several slots, so the single server's scripts
(:mod:`hotset.cachestore.redis_scripts`) do not apply. A put is one ``INCRBY`` of
the byte counter (the budget reservation) and one pipelined ``SET NX`` round
trip per node; a delete is one pipelined round trip of ``STRLEN`` + ``DEL`` per
key per node and one ``DECRBY``. Two repairs keep the counter honest:

* a failure whose effect is known is refunded exactly (per-command results of
  the ``SET`` pipeline: a ``SET`` the server refused is handed back);
* a failure whose effect is unknown (a lost reply) marks the handle *stale*
  (:meth:`~hotset.cachestore.redis_resync.CounterHealth.unsure`), and a stale
  handle resyncs before its next operation.

Until a resync the counter can only be too high (a refused put), never too low:
a reservation is taken before the writes and only refunded once its writes are
known to have failed. A reservation refused over budget resyncs and tries once
more (as often as the handle's health allows), so a counter too high never turns
away bytes that fit. An ``INCRBY`` re-creates a missing counter from its own
bytes: too low until a refusal resyncs it.
"""

from __future__ import annotations

from typing import Any

from hotset.cachestore.base import refuse_over_budget
from hotset.cachestore.redis_resync import CounterHealth, CounterOwner


class ClusterWrites:
    """Reserve, write per node, refund what is known to have failed (module docstring)."""

    def __init__(self, client: Any, *, counter: str, capacity: int, health: CounterHealth) -> None:
        self._client = client
        self._counter = counter
        self._capacity = capacity
        self._health = health

    def put(self, plan: dict[str, bytes], owner: CounterOwner) -> tuple[int, int]:
        """Store the entries of ``plan`` not yet there; (entries stored, bytes added)."""
        if self._health.stale:
            owner.resync()
        adding = sum(len(v) for v in plan.values())
        if not self._reserve(adding):
            # Over budget counting every byte: discount entries already present.
            pipe = self._client.pipeline()
            for rkey in plan:
                pipe.exists(rkey)
            present = pipe.execute()
            plan = {k: v for (k, v), p in zip(plan.items(), present, strict=True) if not p}
            adding = sum(len(v) for v in plan.values())
            if plan and not self._reserve(adding) and not self._resync_and_reserve(adding, owner):
                used = owner.used_bytes()
                refuse_over_budget(
                    items=len(plan), adding=adding, used=used, capacity=self._capacity
                )
        if not plan:
            return 0, 0
        return self._write(plan, adding)

    def _write(self, plan: dict[str, bytes], adding: int) -> tuple[int, int]:
        """``SET NX`` every entry (reserved already); refund the bytes of those that failed."""
        pipe = self._client.pipeline()
        for rkey, value in plan.items():
            pipe.set(rkey, value, nx=True)
        with self._health.unsure():  # a lost reply: which SETs landed is unknown
            stored = pipe.execute(raise_on_error=False)
        failed = [r for r in stored if isinstance(r, Exception)]
        refund = sum(len(v) for v, ok in zip(plan.values(), stored, strict=True) if ok is not True)
        if refund:
            with self._health.unsure():
                self._client.decrby(self._counter, refund)
        if failed:
            raise failed[0]  # after the refund: the counter holds what was stored
        written = sum(1 for ok in stored if ok is True)
        return written, adding - refund

    def _resync_and_reserve(self, nbytes: int, owner: CounterOwner) -> bool:
        """A reservation refused: maybe the counter is too high (a failure elsewhere,
        entries the server evicted): count the entries, then retry."""
        if not self._health.may_resync():
            return False
        owner.resync()
        return self._reserve(nbytes)

    def _reserve(self, nbytes: int) -> bool:
        """Add ``nbytes`` to the shared counter unless that passes the budget."""
        if nbytes == 0:
            return True
        with self._health.unsure():  # a lost INCRBY reply may or may not have counted
            used = int(self._client.incrby(self._counter, nbytes))
        if used <= self._capacity:
            return True
        with self._health.unsure():
            self._client.decrby(self._counter, nbytes)
        return False

    def delete(self, rkeys: list[str], owner: CounterOwner) -> int:
        """Delete entries per node, then take the bytes that went off the counter."""
        if self._health.stale:
            owner.resync()
        pipe = self._client.pipeline()
        for rkey in rkeys:
            pipe.strlen(rkey)
            pipe.delete(rkey)
        with self._health.unsure():
            replies = pipe.execute()
        sizes = [int(n) for n, gone in zip(replies[::2], replies[1::2], strict=True) if gone]
        if sum(sizes):
            with self._health.unsure():  # deleted but still counted: too high until resync
                self._client.decrby(self._counter, sum(sizes))
        return len(sizes)
