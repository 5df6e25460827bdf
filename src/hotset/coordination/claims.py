"""Claims on unit loads in a shared namespace: one job reads a unit, the others wait for it.

Quiver's jobs load a chunk's units in the background, each along the same
permutation from its own place (:class:`hotset.policies.quiver.chunks.ChunkCycle`),
and skip a unit the pool already holds (``pool_unit_hits``). Two jobs that want
the same unit at about the same moment both miss the pool and both read it. A
claim closes that window: before reading a unit that only loads the cache (no
request of the batch is served from it), a job sets ``SET NX`` on the unit's
name with a short expiry; a job that finds it set leaves the read to the
claimant, whose put lands long before a substitution reaches those members (the
chunk being loaded is served after the one being consumed); the claimant drops
its claim once its put has landed, so a claim lives as long as one read. If the
put does not land in time, the
members are read again when served (rebuild reads, counted): claims only save
reads, they never decide what is trained.

A unit is named by the hash of its chunk file, so two data sets sharing a
content-addressed namespace (``@content``) never mistake each other's units;
a unit without a hash (packages a policy wrote for itself) is never claimed.

A claim is a key any client of the server can write, so one that no claimant
set -- no expiry, or one longer than a claim holds, or a key of another type --
is not honoured: the caller takes the claim over (one script, all of a batch's
names, which share the namespace's hash slot). Another job can thus hold back a
unit's background read for at most :data:`CLAIM_TTL_S`, which costs its members
a read when served (a rebuild read), never what is trained.
"""

from __future__ import annotations

from collections.abc import Sequence

from hotset.coordination.chunk_refs import ChunkRefs
from hotset.coordination.namespace import SharedNamespace

__all__ = ["CLAIM_TTL_S", "claim", "release"]

#: how long a claim holds at most: the claimant releases it once its put has landed
#: (:func:`release`); the expiry only covers a claimant that died in between
CLAIM_TTL_S = 3.0

# KEYS: the claims. ARGV: ttl_ms. Per key 1 (claimed) or 0 (another claimant holds it).
_CLAIM = """
local ttl = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, '1', 'NX', 'PX', ttl) then
    out[i] = 1
  else
    local left = redis.call('PTTL', key)
    if left < 0 or left > ttl or redis.call('TYPE', key)['ok'] ~= 'string' then
      redis.call('SET', key, '1', 'PX', ttl)
      out[i] = 1
    else
      out[i] = 0
    end
  end
end
return out
"""


def _key(inner: SharedNamespace, name: str) -> str:
    return f"hotset-claim:{{{inner.namespace}}}:{name}"


def claim(cache: object, names: Sequence[str], *, ttl_s: float = CLAIM_TTL_S) -> list[bool]:
    """For each name, whether this caller may read it (it claimed it, or nothing can).

    Outside a Redis namespace every answer is True: nobody else could read it.
    A failing server raises :class:`~hotset.cachestore.redis_store.CacheUnavailable`.
    """
    inner = cache.cache if isinstance(cache, ChunkRefs) else cache
    if not names or not isinstance(inner, SharedNamespace):
        return [True] * len(names)
    script = inner.client.register_script(_CLAIM)
    keys = [_key(inner, name) for name in names]
    with inner.talking():
        return [bool(reply) for reply in script(keys=keys, args=[max(1, int(ttl_s * 1e3))])]


def release(cache: object, names: Sequence[str]) -> None:
    """Drop claims this caller holds: their units are in the pool now (or never will be)."""
    inner = cache.cache if isinstance(cache, ChunkRefs) else cache
    if names and isinstance(inner, SharedNamespace):
        with inner.talking():
            inner.client.delete(*[_key(inner, name) for name in names])
