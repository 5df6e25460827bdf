"""No password of a cache spec ever shows in an error, a warning or a repr.

Each failure path is run for real (an unreachable port, a malformed spec, a
server that wants a password) and its message searched for the secret.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hotset
from hotset.cachestore.redaction import redact, redact_spec_value, secrets_in
from hotset.cachestore.redis_store import RedisCache
from hotset.cachestore.registry import open_cache, parse_cache_spec
from hotset.errors import HotsetError
from redis_support import start_redis

SECRET = "s3cr3t-Pw"
#: a port nothing listens on: connecting fails at once
DEAD = "127.0.0.1:1"

#: every URL form that carries a password, each pointing at nothing
UNREACHABLE: list[Any] = [
    f"redis://:{SECRET}@{DEAD}/0",
    f"redis://user:{SECRET}@{DEAD}/0",
    f"redis://{DEAD}/0?password={SECRET}",
    f"redis://{DEAD}/0?socket_timeout=0.2&password={SECRET}",
    f"rediss://user:{SECRET}@{DEAD}/0",
    f"unix:///nonexistent/redis.sock?password={SECRET}",
    f"redis+cluster://:{SECRET}@{DEAD},127.0.0.1:2",
    f"redis+cluster://{DEAD},127.0.0.1:2?password={SECRET}",
    f"rediss+cluster://user:{SECRET}@{DEAD}",
    [f"redis://:{SECRET}@{DEAD}", "127.0.0.1:2"],
    [DEAD, f"rediss://user:{SECRET}@127.0.0.1:2"],
]

#: specs wrong in some way, each with a password in it
MALFORMED: list[Any] = [
    f"redis://:{SECRET}@127.0.0.1:99999/0",  # port out of range
    f"redis://:{SECRET}@127.0.0.1:6379/db",  # database not a number
    f"redis://:{SECRET}@[::1/0",  # a bracket never closed
    f"REDIS://:{SECRET}@127.0.0.1:6379/0",  # scheme in capitals
    f"http://:{SECRET}@127.0.0.1:6379/0",  # not redis
    f"redis://127.0.0.1:6379/0?password={SECRET}&socket_timeout=soon",
    f"redis+cluster://:{SECRET}@127.0.0.1:7000/3",  # a cluster has only db 0
    f"redis+cluster://:{SECRET}@127.0.0.1:port",
    f"redis+cluster://:{SECRET}@",
    [f"redis://:{SECRET}@127.0.0.1:7000", "127.0.0.1:port"],
    [f"redis://:{SECRET}@127.0.0.1:7000", 7001],
    [f"redis://:{SECRET}@127.0.0.1:7000", "redis://:other@127.0.0.1:7001"],
    f"redis://:pa/{SECRET}@127.0.0.1:6379/0",  # a '/' left unencoded in the password
    f"redis:/:{SECRET}@127.0.0.1:6379/0",  # a '/' short
    f"redis//:{SECRET}@127.0.0.1:6379/0",  # no ':'
]


def _message(call: Any) -> str:
    with pytest.raises(HotsetError) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize("spec", UNREACHABLE, ids=str)
def test_an_unreachable_server_is_named_without_its_password(spec: Any) -> None:
    text = _message(lambda: RedisCache(spec, namespace="x", capacity_bytes=10))
    assert SECRET not in text
    assert ("***" in text and "127.0.0.1:1" in text) or "nonexistent" in text


@pytest.mark.parametrize("spec", UNREACHABLE + MALFORMED, ids=str)
def test_open_cache_errors_never_show_a_password(spec: Any) -> None:
    text = _message(lambda: open_cache(spec, capacity_bytes=10, namespace="x", n_slots=1))
    assert SECRET not in text and "pa/" not in text


@pytest.mark.parametrize("spec", MALFORMED, ids=str)
def test_spec_checks_never_show_a_password(spec: Any) -> None:
    assert SECRET not in _message(lambda: parse_cache_spec(spec))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from hotset.data import SynthConfig, make_synth

    path = tmp_path_factory.mktemp("redact") / "ds"
    make_synth(path, SynthConfig(n=20, image_size=8, classes=2, seed=1), workers=1)
    return hotset.open_dataset(path, decode="bytes")


@pytest.mark.parametrize("spec", UNREACHABLE + MALFORMED, ids=str)
def test_loader_errors_never_show_a_password(data: Any, spec: Any) -> None:
    """With a budget the cache is opened (and fails); without, the loader asks for one."""
    for budget in ({"cache_bytes": "50%"}, {}):
        text = _message(lambda b=budget: hotset.loader(data, cache=spec, **b))
        assert SECRET not in text, text


def test_a_node_list_without_a_budget_asks_for_one(data: Any) -> None:
    text = _message(lambda: hotset.loader(data, cache=[f"redis://:{SECRET}@{DEAD}", "h:2"]))
    assert "needs cache_bytes=" in text and "Redis Cluster nodes" in text
    assert "already a size" not in text and SECRET not in text


def test_a_password_in_the_query_is_used_and_never_shown(tmp_path: Path) -> None:
    server = start_redis(tmp_path)
    server.client().config_set("requirepass", SECRET)  # set after start: the start PINGs
    try:
        for spec in (
            f"redis://:{SECRET}@127.0.0.1:{server.port}/0",
            f"redis://127.0.0.1:{server.port}/0?password={SECRET}",
        ):
            with RedisCache(spec, namespace="auth", capacity_bytes=100) as cache:
                assert cache.used_bytes() == 0  # authenticated: the server answers
                assert SECRET not in repr(cache) and SECRET not in cache.where
        wrong = f"redis://:wrong-{SECRET}@127.0.0.1:{server.port}/0"
        text = _message(lambda: RedisCache(wrong, namespace="auth", capacity_bytes=100))
        assert SECRET not in text
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"redis://:{SECRET}@h:1/0", "redis://:***@h:1/0"),
        (f"redis://me:{SECRET}@h:1/0", "redis://me:***@h:1/0"),
        (f"rediss://h:1/0?password={SECRET}", "rediss://h:1/0?password=***"),
        (f"redis://h:1/0?a=1&ssl_password={SECRET}&b=2", "redis://h:1/0?a=1&ssl_password=***&b=2"),
        (f"redis+cluster://:{SECRET}@h:1,g:2", "redis+cluster://:***@h:1,g:2"),
        (f"redis://:p@ss{SECRET}@h:1", "redis://:***@h:1"),
        (f"redis://:pa?{SECRET}@h:1/0", "redis://:***@h:1/0"),
        ("redis://me@h:1/0", "redis://me@h:1/0"),
        ("h:1", "h:1"),
    ],
)
def test_redact_hides_every_password_and_keeps_the_rest(url: str, shown: str) -> None:
    assert redact(url) == shown


def test_values_of_other_types_are_named_by_type_only() -> None:
    assert SECRET not in redact_spec_value({"url": f"redis://:{SECRET}@h:1"})
    assert redact_spec_value([f"redis://:{SECRET}@h:1", 3]) == "['redis://:***@h:1', <int>]"
    assert set(secrets_in(f"redis://:{SECRET}@h:1/0?password=other")) == {SECRET, "other"}
