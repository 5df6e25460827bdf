"""The chunk a shared namespace's jobs load now (Quiver FAST'20 Algorithm 1, ``getCurrentChunk``).

Jobs that share a Quiver cache cycle through the same chunks, and they only read a
chunk once between them if they load it at about the same time: a job started half
an epoch after the others that began its cycle at chunk 0 would read chunks the
others released long ago, and load its own chunks alone. In the paper a new job
asks the cache manager for the current chunk (0 when none is cached) and starts
there. Here the namespace keeps that number itself: each job publishes the step
of the chunk it starts loading (steps count chunks from one origin for every job,
chunk ``step mod K``), the key keeps the largest step any job published (the
leading job's newest chunk), and a job about to start its cycle reads it.

The key lives beside the namespace's entries, not under its prefix
(``hotset-cycle:{<namespace>}``, one hash slot for a cluster), so scans of the
namespace never meet it; it expires on its own ``ttl_s`` after the last publish,
so a namespace nobody has used for that long starts again at chunk 0, as the
paper's manager does when nothing is cached. What the server holds is parsed as a
decimal number of at most 12 digits (a cycle of 10**12 chunks is beyond any run, and
a job that joined there still counts far below the 10**18 a publish takes) and
nothing else: anything else reads as "nothing loaded", and so does a value that
would outlive ``ttl_s`` (no expiry, or a longer one: no publish wrote it), which the
read deletes. A server that fails here reads as nothing loaded too, and a publish
that fails is skipped: where a job starts its cycle (one of its chunks) changes how
much it reads, never what it trains.
"""

from __future__ import annotations

from typing import Any

from hotset.cachestore.redis_store import CacheUnavailable
from hotset.coordination.namespace import SharedNamespace
from hotset.errors import HotsetError

__all__ = ["SharedCycle"]

#: the largest step a published value may hold (18 digits: far beyond any run)
_MAX_STEP = 10**18 - 1
#: the most digits of a step read back: a job joins at most at 10**12 - 1
_READ_DIGITS = 12

# KEYS: the namespace's cycle key. ARGV: the step, ttl_s. Keeps the larger step; a value
# that is not a step (what current() reads as nothing) is replaced.
_PUBLISH = """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then redis.call('DEL', KEYS[1]) end
local now = redis.call('GET', KEYS[1])
local valid = now and #now <= 12 and string.match(now, '^%d+$')
if (not valid) or (tonumber(ARGV[1]) > tonumber(now)) then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
else
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return 1
"""

# KEYS: the cycle key. ARGV: ttl_s. The value, or nil where it is no publish's (another
# type, no expiry, or one longer than a publish sets): such a value is deleted.
_CURRENT = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return false end
local left = redis.call('PTTL', KEYS[1])
if kind ~= 'string' or left < 0 or left > 1000 * tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
  return false
end
return redis.call('GET', KEYS[1])
"""


class SharedCycle:
    """One job's handle on its shared namespace's current chunk step."""

    def __init__(self, cache: SharedNamespace, *, ttl_s: float = 600.0) -> None:
        if not isinstance(cache, SharedNamespace):
            raise HotsetError(f"a shared chunk cycle needs a Redis namespace, got {cache!r}")
        if not ttl_s >= 1:
            raise HotsetError(f"ttl_s must be >= 1 second, got {ttl_s!r}")
        self.cache = cache
        self.ttl_s = float(ttl_s)
        self.key = f"hotset-cycle:{{{cache.namespace}}}"
        #: publishes the server did not take (it failed); reads it failed count as None
        self.failures = 0
        self._script: Any = cache.client.register_script(_PUBLISH)  # loaded on first use
        self._current: Any = cache.client.register_script(_CURRENT)

    def current(self) -> int | None:
        """The largest step any job published within ``ttl_s``; None: nothing loaded
        (no job published, the key expired, or the server failed or holds no number)."""
        try:
            with self.cache.talking():
                raw = self._current(keys=[self.key], args=[max(1, int(self.ttl_s))])
        except CacheUnavailable:
            self.failures += 1
            return None
        return parse_step(raw)

    def publish(self, step: int) -> None:
        """This job starts loading the chunk of ``step``: keep it if it is the largest."""
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= _MAX_STEP:
            raise HotsetError(f"a chunk cycle step must be an int in 0..{_MAX_STEP}, got {step!r}")
        try:
            with self.cache.talking():
                self._script(keys=[self.key], args=[step, max(1, int(self.ttl_s))])
        except CacheUnavailable:
            self.failures += 1


def parse_step(raw: object) -> int | None:
    """A step the server holds: a decimal number of at most 12 digits, else None."""
    if isinstance(raw, str):
        raw = raw.encode("ascii", "replace")
    if not isinstance(raw, bytes) or not 0 < len(raw) <= _READ_DIGITS or not raw.isdigit():
        return None
    return int(raw)
