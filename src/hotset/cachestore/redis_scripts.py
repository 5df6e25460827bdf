"""The Lua scripts that keep a namespace's counter exact; the single-server writes run them.

On a single server the budget reservation and the writes are one script
(:data:`PUT_SCRIPT`), and a delete's ``STRLEN``/``DEL``/``DECRBY`` another
(:data:`DELETE_SCRIPT`): Redis runs a script whole or not at all, so a lost
reply leaves the counter and the entries in agreement either way; and an OOM
refusal hits the script's first write, before anything changed (the script only
reads before it). The put script checks the budget itself, after discounting
entries already present, so a refused put changes nothing. Scripts were chosen
over ``MULTI``/``EXEC`` because the reservation depends on what is present and
on the counter's value, which a transaction cannot branch on without ``WATCH``
retries.

A counter that is missing or not a count (the server evicted it -- its LRU
clock ticks once a second, so a key touched every batch is not safe -- or a
client deleted or overwrote it) would read as 0 and let the namespace pass its
budget: the put script stores nothing then (status :data:`NO_COUNTER`) and the
handle resyncs first, always. The delete script leaves such a counter as it is.
A handle that may store creates its namespace's counter if there is none
(``SET NX 0``), so a missing one means it went away, not that the namespace is
new.

:data:`RESYNC_SCRIPT` is the compare-and-set of a resync
(:mod:`hotset.cachestore.redis_resync`); it has one key, so it runs on a cluster
too. A cluster's writes are :mod:`hotset.cachestore.redis_cluster`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hotset.cachestore.base import refuse_over_budget
from hotset.cachestore.redis_resync import CounterHealth, CounterOwner

# Reserve and write in one step (see the module docstring). KEYS[1] is the counter,
# KEYS[i] (i > 1) an entry whose bytes are ARGV[i]; ARGV[1] is capacity_bytes.
# Reads first: an OOM refusal then hits the first SET, before anything changed.
# Returns {status, bytes added (or that would be), entries, used before}: status 1
# stored, 0 over budget, 2 the counter is missing or not a count (a server that
# evicts dropped it, another client deleted or overwrote it): nothing is stored
# until a resync has counted the entries again.
PUT_SCRIPT = """
local fresh, adding = {}, 0
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    fresh[#fresh + 1] = i
    adding = adding + string.len(ARGV[i])
  end
end
local used = tonumber(redis.call('GET', KEYS[1]) or '')
if #fresh == 0 then return {1, 0, 0, used or 0} end
if used == nil or used < 0 then return {2, adding, #fresh, 0} end
if used + adding > tonumber(ARGV[1]) then return {0, adding, #fresh, used} end
for _, i in ipairs(fresh) do redis.call('SET', KEYS[i], ARGV[i]) end
redis.call('INCRBY', KEYS[1], adding)
return {1, adding, #fresh, used}
"""
# Resync's compare-and-set: KEYS[1] is the counter, ARGV[1] the value it held before
# the scan ('' for none), ARGV[2] the scanned total. Sets it only if unchanged, so
# a put or delete another client made during the scan is never overwritten.
RESYNC_SCRIPT = """
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
"""
# A single server's whole resync in one script: count what the namespace's entries
# hold and set the counter to it, atomically, so no put or delete of another client
# lands between the count and the set. (A scan from the client with a compare-and-set
# after it lost updates: a put and a delete of equal size during the scan left the
# counter as it was, the set went through, and the counter ended 1,400 bytes low.)
# The server is busy for the length of the scan -- only at a refused put, and spaced
# (redis_resync.RESYNC_DUTY). KEYS[1] is the counter, ARGV[1] the entries' MATCH
# pattern, ARGV[2] the SCAN count. Returns {total, the counter's value before}.
ATOMIC_RESYNC_SCRIPT = """
local before = redis.call('GET', KEYS[1])
local cursor, total = '0', 0
repeat
  local step = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', ARGV[2])
  cursor = step[1]
  for _, key in ipairs(step[2]) do
    if key ~= KEYS[1] then total = total + redis.call('STRLEN', key) end
  end
until cursor == '0'
redis.call('SET', KEYS[1], total)
return {total, before or ''}
"""
#: the put script's status: stored, refused over budget, no counter to check against
STORED, REFUSED, NO_COUNTER = 1, 0, 2
# Delete entries and take their bytes off the counter in one step. DEL is allowed
# under OOM, and once a script has written its DECRBY is too. A counter that is
# missing or not a count is left so (a DECRBY would make it a wrong count, or fail):
# the next put resyncs it.
DELETE_SCRIPT = """
local removed, freed = 0, 0
for i = 2, #KEYS do
  local n = redis.call('STRLEN', KEYS[i])
  if redis.call('DEL', KEYS[i]) == 1 then
    removed = removed + 1
    freed = freed + n
  end
end
local used = tonumber(redis.call('GET', KEYS[1]) or '')
if freed > 0 and used ~= nil and used >= 0 then redis.call('DECRBY', KEYS[1], freed) end
return {removed, freed}
"""


class ScriptWrites:
    """Puts and deletes on a single server: one ``EVALSHA`` each, counter included."""

    def __init__(
        self, redis: Any, client: Any, *, counter: str, capacity: int, health: CounterHealth
    ) -> None:
        self._counter = counter
        self._capacity = capacity
        self._health = health
        self._put_script: Any = client.register_script(PUT_SCRIPT)
        self._delete_script: Any = client.register_script(DELETE_SCRIPT)
        # Loaded now, so a batch's put is one EVALSHA from the first one on
        # (a restarted server forgets them; redis-py then loads them again).
        client.script_load(PUT_SCRIPT)
        client.script_load(DELETE_SCRIPT)
        if capacity > 0:  # a handle that may store (not an admin's, not drop's)
            # A namespace's counter exists from its first handle on, so that a put
            # finding none knows it was evicted or deleted and counts again (the
            # put script's status 2); set only where missing, so a joined count
            # stays. Best effort: a server out of memory refuses it, and its puts
            # degrade as the loader's do.
            with contextlib.suppress(redis.exceptions.ResponseError):
                client.set(counter, 0, nx=True)

    def put(self, plan: dict[str, bytes], owner: CounterOwner) -> tuple[int, int]:
        """Reserve and write in one script run: all of it happens, or none of it.

        A refusal resyncs the counter (when the handle's
        :class:`~hotset.cachestore.redis_resync.CounterHealth` allows) and tries
        once more: a counter left too high by evicted entries or another client
        must not turn away bytes that fit. Returns (entries stored, bytes added).
        """
        keys, args = [self._counter, *plan], [self._capacity, *plan.values()]
        status, adding, entries, used = (int(v) for v in self._put_script(keys=keys, args=args))
        # A missing counter is always counted again (nothing may be stored without
        # one); a refusal only as often as may_resync allows.
        if status == NO_COUNTER or (status == REFUSED and self._health.may_resync()):
            owner.resync()
            status, adding, entries, used = (int(v) for v in self._put_script(keys=keys, args=args))
        if status != STORED:
            refuse_over_budget(items=entries, adding=adding, used=used, capacity=self._capacity)
        return entries, adding

    def delete(self, rkeys: list[str], owner: CounterOwner) -> int:
        """Delete entries and take their bytes off the counter in one script run."""
        removed, _ = (int(v) for v in self._delete_script(keys=[self._counter, *rkeys]))
        return removed
