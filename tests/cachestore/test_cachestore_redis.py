"""RedisCache against a real redis-server: bytes, budget, round trips, errors."""

from __future__ import annotations

import pickle
import sys
import time

import pytest
import redis
from cachestore_support import SendCounter, command_calls, item, payload
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.cachestore import CacheKey, CacheStore, content_hash
from hotset.cachestore.base import PutRefused
from hotset.cachestore.redis_resync import set_to_scanned
from hotset.cachestore.redis_store import RedisCache
from hotset.errors import HotsetError, IntegrityError
from redis_support import RedisProcess


@pytest.fixture
def cache(redis_url: str) -> RedisCache:
    c = RedisCache(redis_url, namespace="ds", capacity_bytes=10_000)
    yield c
    c.close()


def test_is_a_cache_store(cache: RedisCache) -> None:
    assert isinstance(cache, CacheStore)


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.integers(0, 1000), st.binary(max_size=3000), max_size=12))
def test_round_trip_is_byte_exact(redis_server: RedisProcess, contents: dict[int, bytes]) -> None:
    with RedisCache(redis_server.url, namespace="rt", capacity_bytes=10**6) as cache:
        cache.clear()
        items = [item(i, d) for i, d in contents.items()]
        cache.put_many(items)
        assert cache.get_many([k for k, _ in items]) == list(contents.values())
        assert all(cache.contains(k) for k, _ in items)
        assert cache.used_bytes() == sum(len(d) for d in contents.values())
        missing = [CacheKey(i, content_hash(d + b"!")) for i, d in contents.items()]
        assert cache.get_many(missing) == [None] * len(missing)


def test_bytes_are_stored_unchanged_under_a_namespaced_content_key(
    cache: RedisCache, redis_server: RedisProcess
) -> None:
    key, data = item(3, payload(3, 5000))
    cache.put_many([(key, data)])
    raw = redis_server.client()
    assert cache.redis_key(key) == f"hotset:ds:{key.sample_id}:{key.content_hash}"
    assert raw.get(f"hotset:ds:{key.sample_id}:{key.content_hash}") == data
    assert int(raw.get("hotset:ds:used-bytes") or 0) == 5000


def test_two_ids_with_identical_bytes_are_independent(cache: RedisCache) -> None:
    data = payload(7, 1000)
    a, b = CacheKey(1, content_hash(data)), CacheKey(2, content_hash(data))
    cache.put_many([(a, data), (b, data)])
    assert cache.used_bytes() == 2000
    cache.delete_many([a])
    assert cache.get_many([a, b]) == [None, data]
    assert cache.used_bytes() == 1000


def test_a_batch_is_one_round_trip_and_one_command_per_key(
    cache: RedisCache, redis_server: RedisProcess, send_counter: SendCounter
) -> None:
    items = [item(i, payload(i, 100)) for i in range(64)]
    keys = [k for k, _ in items]
    raw = redis_server.client()

    raw.config_resetstat()
    send_counter.reset()
    cache.put_many(items)
    assert send_counter.total == 1  # one script: the budget check, 64 SETs, the counter
    assert command_calls(raw, "evalsha") == 1

    raw.config_resetstat()
    send_counter.reset()
    assert cache.get_many(keys) == [d for _, d in items]
    assert send_counter.total == 1
    assert command_calls(raw, "get") == 64
    assert command_calls(raw, "exists") == 0  # no existence check before the read

    send_counter.reset()
    cache.delete_many(keys[:32])
    assert send_counter.total == 1  # one script: 32 deletes and the counter
    assert cache.used_bytes() == 3200


def test_budget_holds_across_operations(cache: RedisCache) -> None:
    items = [item(i, payload(i, 1000)) for i in range(10)]
    cache.put_many(items)
    assert cache.used_bytes() == 10_000
    extra = item(10, payload(10, 1))
    with pytest.raises(HotsetError) as err:
        cache.put_many([extra])
    message = str(err.value)
    assert "adding 1 bytes" in message and "capacity_bytes=10000" in message
    assert "to 10000 bytes used" in message
    assert cache.used_bytes() == 10_000
    assert cache.get_many([extra[0]]) == [None]
    # Entries already present cost nothing: putting them again is not refused.
    cache.put_many(items[:3])
    assert cache.used_bytes() == 10_000
    cache.delete_many([items[0][0]])
    cache.put_many([extra])
    assert cache.used_bytes() == 9001


ops = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "delete"]),
        st.lists(st.tuples(st.integers(0, 9), st.integers(0, 600)), min_size=1, max_size=3),
    ),
    min_size=3,
    max_size=15,
)


@settings(max_examples=25, deadline=None)
@given(ops)
def test_never_over_budget_and_refusals_change_nothing(
    redis_server: RedisProcess, operations: list[tuple[str, list[tuple[int, int]]]]
) -> None:
    capacity = 2000
    model: dict[CacheKey, bytes] = {}  # by (id, content hash), like the Redis keys
    with RedisCache(redis_server.url, namespace="budget", capacity_bytes=capacity) as cache:
        cache.clear()
        for kind, args in operations:
            batch = [item(i, payload(i * 1000 + size, size)) for i, size in args]
            if kind == "put":
                after = dict(model)
                after.update({k: d for k, d in batch})
                if sum(map(len, after.values())) > capacity:
                    with pytest.raises(HotsetError, match="would exceed"):
                        cache.put_many(batch)
                else:
                    cache.put_many(batch)
                    model = after
            else:
                cache.delete_many([k for k, _ in batch])
                for k, _ in batch:
                    model.pop(k, None)
            assert cache.used_bytes() == sum(map(len, model.values())) <= capacity
            keys = list(model)
            assert cache.get_many(keys) == list(model.values())


def test_two_clients_share_one_budget(redis_url: str) -> None:
    a = RedisCache(redis_url, namespace="shared", capacity_bytes=1000)
    b = RedisCache(redis_url, namespace="shared", capacity_bytes=1000)
    big = item(0, payload(0, 600))
    a.put_many([big])
    assert b.used_bytes() == 600
    with pytest.raises(HotsetError, match="to 600 bytes used"):
        b.put_many([item(1, payload(1, 500))])
    assert b.get_many([big[0]]) == [big[1]]  # and b sees a's bytes
    b.delete_many([big[0]])
    assert a.used_bytes() == 0
    b.put_many([item(1, payload(1, 500))])
    assert a.used_bytes() == 500
    a.close()
    b.close()


def test_namespaces_are_separate_and_clear_touches_only_its_own(redis_url: str) -> None:
    one = RedisCache(redis_url, namespace="one", capacity_bytes=1000)
    two = RedisCache(redis_url, namespace="one-two", capacity_bytes=1000)
    entry = item(0, payload(0, 100))
    one.put_many([entry])
    two.put_many([entry])
    one.clear()
    assert one.used_bytes() == 0 and one.get_many([entry[0]]) == [None]
    assert two.used_bytes() == 100 and two.get_many([entry[0]]) == [entry[1]]


def test_verify_catches_bytes_changed_in_redis(cache: RedisCache, redis_url: str) -> None:
    key, data = item(1, payload(1, 300))
    cache.put_many([(key, data)])
    tampered = bytes([data[0] ^ 1]) + data[1:]
    redis.Redis.from_url(redis_url).set(cache.redis_key(key), tampered)
    checking = RedisCache(redis_url, namespace="ds", capacity_bytes=10_000, verify=True)
    with pytest.raises(IntegrityError, match="sample 1 should hash to"):
        checking.get_many([key])
    assert cache.get_many([key]) == [tampered]  # unverified: served as stored
    with pytest.raises(IntegrityError):
        checking.put_many([(CacheKey(2, content_hash(b"a")), b"b")])


def test_stats_count_keys_and_bytes(cache: RedisCache) -> None:
    a, b = item(0, payload(0, 10)), item(1, payload(1, 20))
    cache.put_many([a, b, a])
    cache.get_many([a[0], b[0], CacheKey(2, content_hash(b"x"))])
    cache.delete_many([a[0], CacheKey(5, content_hash(b"y"))])
    assert cache.stats().as_dict() == {
        "gets": 3,
        "hits": 2,
        "misses": 1,
        "bytes_served": 30,
        "puts": 2,
        "bytes_written": 30,
        "deletes": 1,
        "resyncs": 0,
        "resync_bytes": 0,
    }


def test_pickle_reconnects(cache: RedisCache) -> None:
    entry = item(4, payload(4, 64))
    cache.put_many([entry])
    clone = pickle.loads(pickle.dumps(cache))
    assert clone is not cache
    assert clone.get_many([entry[0]]) == [entry[1]]
    assert clone.capacity_bytes == 10_000 and clone.namespace == "ds"
    clone.close()


def test_unreachable_server_fails_fast_with_the_url() -> None:
    with pytest.raises(HotsetError, match=r"^cannot reach redis at redis://127\.0\.0\.1:1/0: "):
        RedisCache("redis://127.0.0.1:1/0", namespace="x", capacity_bytes=10)


def test_passwords_stay_out_of_error_messages() -> None:
    with pytest.raises(HotsetError) as err:
        RedisCache("redis://:hunter2@127.0.0.1:1/0", namespace="x", capacity_bytes=10)
    assert "hunter2" not in str(err.value)
    assert "redis://:***@127.0.0.1:1/0" in str(err.value)


def test_missing_client_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(HotsetError, match=r"pip install 'hotset\[redis\]'"):
        RedisCache("redis://127.0.0.1:6379/0", namespace="x", capacity_bytes=10)


@pytest.mark.parametrize("namespace", ["", "a:b", "a{b}", "a*", "a b", 7])
def test_bad_namespace_is_named(namespace: object, redis_url: str) -> None:
    with pytest.raises(HotsetError, match="namespace"):
        RedisCache(redis_url, namespace=namespace, capacity_bytes=10)  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["http://127.0.0.1:1", "127.0.0.1:6379"])
def test_unsupported_urls_are_named(url: str) -> None:
    with pytest.raises(HotsetError, match="unsupported URL"):
        RedisCache(url, namespace="x", capacity_bytes=10)


# -- a counter that disagrees with what is stored (issue #25, item 3) -------------------


def _stored(client: redis.Redis, namespace: str) -> int:
    """What the namespace's entries really hold, counted apart from the cache under test."""
    counter = f"hotset:{namespace}:used-bytes".encode()
    keys = [k for k in client.scan_iter(match=f"hotset:{namespace}:*") if k != counter]
    return sum(int(client.strlen(k)) for k in keys)


def _counter(client: redis.Redis, namespace: str) -> int:
    return int(client.get(f"hotset:{namespace}:used-bytes") or 0)


@pytest.mark.parametrize("fault", ["evicted", "raised", "shortened"])
def test_a_counter_left_high_never_refuses_bytes_that_fit(
    cache: RedisCache, redis_server: RedisProcess, fault: str
) -> None:
    """An entry the server evicted (a DEL behind the counter's back), another client's
    INCRBY, or an entry another client shortened before the policy deleted it: each
    leaves the counter above what is stored. The next put that fits must land."""
    raw = redis_server.client()
    items = [item(i, payload(i, 1000)) for i in range(10)]
    cache.put_many(items)  # the budget (10 000) is full
    if fault == "evicted":
        raw.delete(cache.redis_key(items[0][0]))
    elif fault == "raised":
        raw.incrby("hotset:ds:used-bytes", 5000)
        cache.delete_many([items[0][0]])
    else:
        raw.set(cache.redis_key(items[0][0]), b"short")
        cache.delete_many([items[0][0]])  # takes 5 bytes off, not 1000
    assert _counter(raw, "ds") > _stored(raw, "ds")
    extra = item(10, payload(10, 1000))
    cache.put_many([extra])  # refused before: "would exceed capacity_bytes"
    assert cache.get_many([extra[0]]) == [extra[1]]
    assert _counter(raw, "ds") == _stored(raw, "ds") == 10_000
    stats = cache.stats()
    assert stats.resyncs == 1 and stats.resync_bytes > 0


def test_a_put_that_does_not_fit_is_refused_after_the_resync(
    cache: RedisCache, redis_server: RedisProcess
) -> None:
    raw = redis_server.client()
    cache.put_many([item(i, payload(i, 1000)) for i in range(10)])
    raw.incrby("hotset:ds:used-bytes", 700)
    with pytest.raises(PutRefused, match="to 10000 bytes used") as err:
        cache.put_many([item(10, payload(10, 1))])
    assert (err.value.adding, err.value.used, err.value.capacity) == (1, 10_000, 10_000)
    assert _counter(raw, "ds") == _stored(raw, "ds") == 10_000  # repaired all the same


def test_resync_keeps_a_put_another_client_makes_while_it_scans(redis_url: str) -> None:
    """The cluster's resync (scan, then compare-and-set) only sets the counter if nobody
    changed it during the scan: else a put made meanwhile would be counted by neither,
    and the namespace could pass its budget. Run against one real server here."""
    cache = RedisCache(redis_url, namespace="race", capacity_bytes=100_000)
    other = RedisCache(redis_url, namespace="race", capacity_bytes=100_000)
    cache.put_many([item(i, payload(i, 100)) for i in range(5)])
    landed: list[int] = []

    def scan_then_other_put() -> int:
        total = cache._stored_total()
        if not landed:  # once: another job's put lands right after this scan
            other.put_many([item(99, payload(99, 4000))])
            landed.append(1)
        return total

    counter = "hotset:race:used-bytes"
    assert set_to_scanned(cache._client, cache._resync_script, counter, scan_then_other_put) == (
        4500,
        0,
    )
    raw = redis.Redis.from_url(redis_url)
    assert _counter(raw, "race") == _stored(raw, "race") == 4500
    cache.close()
    other.close()


def test_a_single_servers_resync_counts_and_sets_in_one_step(redis_url: str) -> None:
    """One script: no put or delete lands between the count and the set (a scan and a
    compare-and-set lost a put and a delete of equal size made during the scan)."""
    cache = RedisCache(redis_url, namespace="atomic", capacity_bytes=100_000)
    cache.put_many([item(i, payload(i, 100)) for i in range(5)])
    raw = redis.Redis.from_url(redis_url)
    raw.set("hotset:atomic:used-bytes", 123_456)  # another client's write
    assert cache.resync() == 500
    assert _counter(raw, "atomic") == _stored(raw, "atomic") == 500
    assert cache.stats().resyncs == 1
    cache.close()


def test_a_namespace_others_keep_full_resyncs_only_a_share_of_the_time(
    cache: RedisCache, redis_server: RedisProcess
) -> None:
    """Every put into a full namespace is refused; a resync each time would scan the
    keyspace once per item. They are spaced to at most a tenth of the time instead."""
    cache.put_many([item(i, payload(i, 1000)) for i in range(10)])
    refused = 0
    started = time.monotonic()
    for i in range(10, 200):
        with pytest.raises(PutRefused):
            cache.put_many([item(i, payload(i, 10))])
        refused += 1
    elapsed = time.monotonic() - started
    resyncs = cache.stats().resyncs
    # the first refusal resyncs; the rest mostly find the last resync too recent
    assert refused == 190 and 1 <= resyncs <= refused // 10
    assert _counter(redis_server.client(), "ds") == 10_000
    assert elapsed < 10


@pytest.mark.parametrize("fault", ["evicted", "overwritten", "negative"])
def test_a_counter_that_is_gone_is_counted_again_before_a_put(
    cache: RedisCache, redis_server: RedisProcess, fault: str
) -> None:
    """A server that evicts may drop the counter itself (its LRU clock ticks once a
    second, so a counter touched every batch is no safer than an entry); a counter
    read as 0 would let the namespace pass its budget."""
    raw = redis_server.client()
    items = [item(i, payload(i, 1000)) for i in range(10)]
    cache.put_many(items)
    counter = "hotset:ds:used-bytes"
    if fault == "evicted":
        raw.delete(counter)
    elif fault == "overwritten":
        raw.set(counter, b"lots")
    else:
        raw.delete(counter)
        raw.decrby(counter, 500)
    assert cache.used_bytes() == 0
    before = raw.get(counter)
    cache.delete_many([items[0][0]])  # a wrong count is not made a different wrong count
    assert raw.get(counter) == before
    with pytest.raises(PutRefused, match="to 9000 bytes used"):
        cache.put_many([item(10, payload(10, 1001))])  # stored before: "to 0 bytes used"
    assert _counter(raw, "ds") == _stored(raw, "ds") == 9000
    cache.put_many([item(10, payload(10, 1000))])
    assert _counter(raw, "ds") == _stored(raw, "ds") == 10_000
