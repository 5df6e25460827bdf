"""``hotset cache ls|gc|rm --redis URL`` against a real redis-server.

Four namespaces, made the way jobs make them: a live private one (its lease
renewed far ahead), an abandoned private one (lease lapsed: a killed job), an
idle shared one (its jobs ended) and an unregistered one (an older hotset).
"""

from __future__ import annotations

import json
import time

import pytest

from cli_support import run_cli
from hotset.cachestore.base import CacheKey
from hotset.cachestore.redis_leases import Lease
from hotset.cachestore.redis_store import RedisCache
from hotset.data.manifest import content_hash


def _fill(url: str, namespace: str, nbytes: int) -> None:
    cache = RedisCache(url, namespace=namespace, capacity_bytes=10**6)
    try:
        blob = bytes(range(256)) * (nbytes // 256)
        cache.put_many([(CacheKey(0, content_hash(blob)), blob)])
    finally:
        cache.close()


@pytest.fixture
def namespaces(redis_url: str) -> dict[str, str]:
    import redis

    client = redis.Redis.from_url(redis_url)
    names = {"live": "p-live", "dead": "p-dead", "shared": "team@abc", "old": "old-style"}
    for i, (role, name) in enumerate(names.items()):
        _fill(redis_url, name, 1024 * (i + 1))
        if role != "old":
            kind = "shared" if role == "shared" else "private"
            Lease(
                client, name, kind=kind, dataset="abc", ttl_s=60 if role == "live" else 0.05
            ).renew()
    time.sleep(0.1)  # the short leases lapse
    client.close()
    return names


def _run(*args: str) -> tuple[int, str]:
    return run_cli("cache", *args)


def _ls(url: str) -> dict[str, dict[str, object]]:
    code, out = _run("ls", "--redis", url, "--json")
    assert code == 0, out
    return {row["name"]: row for row in json.loads(out)}


def test_ls_shows_kind_jobs_and_bytes(redis_url: str, namespaces: dict[str, str]) -> None:
    rows = _ls(redis_url)
    assert set(rows) == set(namespaces.values())
    assert rows["p-live"]["kind"] == "private" and rows["p-live"]["live_jobs"] == 1
    assert rows["p-dead"]["live_jobs"] == 0
    assert rows["team@abc"]["kind"] == "shared"
    assert rows["old-style"]["kind"] == "unknown"
    assert rows["p-dead"]["used_bytes"] == 2048
    code, table = _run("ls", "--redis", redis_url)
    assert code == 0 and "4 namespaces" in table and "2.0 KiB in abandoned" in table


def test_gc_removes_abandoned_private_namespaces_only(
    redis_url: str, namespaces: dict[str, str]
) -> None:
    code, out = _run("gc", "--redis", redis_url)
    assert code == 0, out
    assert "removed p-dead" in out and "freed 2048 bytes" in out
    assert set(_ls(redis_url)) == {"p-live", "team@abc", "old-style"}
    code, out = _run("gc", "--redis", redis_url, "--shared-idle", "0", "--unknown")
    assert code == 0, out
    assert set(_ls(redis_url)) == {"p-live"}  # a live job's namespace is never collected


def test_gc_keeps_a_recently_idle_shared_namespace(
    redis_url: str, namespaces: dict[str, str]
) -> None:
    code, out = _run("gc", "--redis", redis_url, "--shared-idle", "3600")
    assert code == 0, out
    assert "team@abc" in _ls(redis_url)


def test_rm_refuses_a_live_namespace_unless_forced(
    redis_url: str, namespaces: dict[str, str]
) -> None:
    code, out = _run("rm", "p-live", "--redis", redis_url)
    assert code == 2 and "1 live job" in out
    code, out = _run("rm", "p-live", "--redis", redis_url, "--force")
    assert code == 0, out
    assert "p-live" not in _ls(redis_url)
    code, out = _run("rm", "nope", "--redis", redis_url)
    assert code == 2 and "no hotset namespace 'nope'" in out


def test_an_unreachable_server_is_one_clear_line() -> None:
    code, out = _run("ls", "--redis", "redis://127.0.0.1:1/0")
    assert code == 2 and "cannot reach redis" in out and "Traceback" not in out


def test_redis_only_options_need_redis() -> None:
    code, out = _run("gc", "--shared-idle", "10")
    assert code == 2 and "--redis" in out
