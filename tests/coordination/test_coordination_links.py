"""``hotset.coordination.links``: the links a policy's roles ask for, made only where its
cache is a namespace other jobs share (a real redis-server), and driven as one object."""

from __future__ import annotations

import numpy as np
import pytest

from hotset.cachestore.redis_store import RedisCache
from hotset.cachestore.shm import SharedMemoryCache
from hotset.coordination import SharedNamespace, shared_namespace
from hotset.coordination.chunk_refs import ChunkRefs
from hotset.coordination.links import Coordination, Where, connect, evicting_in_concert
from hotset.engine.budget import Budget
from hotset.errors import HotsetError
from hotset.systems.base import System
from hotset.systems.registry import build_system
from layout_support import make_layout

N, BATCH = 64, 8


def _system(spec: str) -> System:
    sizes = np.full(N, 100, dtype=np.int64)
    layout = make_layout(sizes, 8, seed=1) if spec.startswith("quiver") else None
    budget = Budget(capacity_bytes=int(sizes.sum()) // 2, sizes=sizes)
    return build_system(spec, n=N, budget=budget, seed=0, batch_size=BATCH, layout=layout)


def _where(cache: object | None, *, shared: bool, world_size: int = 1) -> Where:
    return Where(
        cache=cache,
        shared=shared,
        dataset="ds",
        rank=0,
        world_size=world_size,
        batch_size=BATCH,
        budget_bytes=3200,
    )


@pytest.fixture
def redis_cache(redis_url: str) -> RedisCache:
    cache = RedisCache(redis_url, namespace="links", capacity_bytes=100_000)
    cache.clear()
    return cache


def test_a_redis_namespace_is_shared_and_the_embedded_cache_is_not(
    redis_cache: RedisCache,
) -> None:
    shm = SharedMemoryCache(capacity_bytes=10_000, n_slots=4)
    try:
        assert isinstance(redis_cache, SharedNamespace)
        assert shared_namespace(redis_cache) is redis_cache
        assert shared_namespace(shm) is None and shared_namespace(None) is None
    finally:
        shm.close()


def test_multijob_icache_gets_a_jobs_link_with_its_probe_in_batches(
    redis_cache: RedisCache,
) -> None:
    system = _system("icache[multijob=true,benefit_probe=3]")
    links = connect(
        system.policy, system.table, joins_cycle=False, where=_where(redis_cache, shared=True)
    )
    assert links.jobs is not None and links.cycle is None and links.probes is None
    assert links.jobs.probe == 3  # benefit_probe batches of BATCH requests each
    links.epoch_closed([])  # an epoch not timed: nothing measured, the others read
    assert links.jobs.benefit is None
    links.leave(redis_cache, lambda sid: (sid, 0))


@pytest.mark.parametrize(
    ("spec", "shared", "world_size"),
    [
        ("icache", True, 1),  # keyed by its own importance: no link
        ("icache[multijob=true]", False, 1),  # a private namespace: nobody to exchange with
        ("icache[multijob=true]", True, 2),  # ranks of one job: not §III-D's jobs
        ("lru", True, 1),
    ],
)
def test_no_link_where_the_role_or_the_shared_namespace_is_missing(
    redis_cache: RedisCache, spec: str, shared: bool, world_size: int
) -> None:
    system = _system(spec)
    where = _where(redis_cache, shared=shared, world_size=world_size)
    links = connect(system.policy, system.table, joins_cycle=False, where=where)
    assert links == Coordination()


def test_quiver_joins_the_cycle_and_places_on_the_board_only_when_shared(
    redis_cache: RedisCache,
) -> None:
    system = _system("quiver[placement=true,probe=4]")
    shared = connect(
        system.policy, system.table, joins_cycle=True, where=_where(redis_cache, shared=True)
    )
    assert shared.cycle is not None and shared.probes is not None
    assert shared.probes.board is not None and shared.jobs is None
    alone = connect(
        system.policy, system.table, joins_cycle=True, where=_where(redis_cache, shared=False)
    )
    assert alone.cycle is None  # starts at step 0
    assert alone.probes is not None and alone.probes.board is None  # its own probe only


def test_a_cycle_flag_without_the_role_names_the_role(redis_cache: RedisCache) -> None:
    system = _system("lru")
    with pytest.raises(
        HotsetError,
        match=r"capabilities.joins_cycle but does not implement hotset.engine.roles.JoinsCycle",
    ):
        connect(
            system.policy, system.table, joins_cycle=True, where=_where(redis_cache, shared=True)
        )


def test_evictions_in_concert_only_on_a_shared_namespace(redis_cache: RedisCache) -> None:
    policy = _system("quiver").policy
    wrapped = evicting_in_concert(redis_cache, policy, shared=True, scope="")
    assert isinstance(wrapped, ChunkRefs) and wrapped.cache is redis_cache
    assert evicting_in_concert(redis_cache, policy, shared=False, scope="") is redis_cache
    lru = _system("lru").policy
    assert evicting_in_concert(redis_cache, lru, shared=True, scope="") is redis_cache
