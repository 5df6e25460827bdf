"""Cache keys, content hashes, stats: the vocabulary every backend shares."""

from __future__ import annotations

import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from hotset.cachestore import CacheKey, CacheStats, check_cache_key, content_hash
from hotset.cachestore.base import CacheStatsCounter, refuse_over_budget
from hotset.errors import HotsetError


@given(st.binary(max_size=500))
def test_content_hash_is_16_hex_of_xxh3_64(data: bytes) -> None:
    digest = content_hash(data)
    assert len(digest) == 16 and int(digest, 16) == xxhash.xxh3_64_intdigest(data)
    assert check_cache_key((0, digest)) == CacheKey(0, digest)


def test_plain_tuples_become_keys() -> None:
    key = check_cache_key((5, "00000000000000ff"))
    assert isinstance(key, CacheKey) and key.sample_id == 5


@pytest.mark.parametrize(
    "key",
    [
        (True, "0" * 16),
        (1.0, "0" * 16),
        (1, "0" * 15),
        (1, "g" * 16),
        (1, b"0" * 16),
        [1, "0" * 16],
        (1,),
    ],
)
def test_bad_keys_are_refused(key: object) -> None:
    with pytest.raises(HotsetError, match="cache key"):
        check_cache_key(key)


def test_stats_counter_adds_up() -> None:
    counter = CacheStatsCounter()
    counter.add_gets(hits=3, misses=2, bytes_served=30)
    counter.add_puts(4, 400)
    counter.add_deletes(1)
    assert counter.snapshot() == CacheStats(5, 3, 2, 30, 4, 400, 1)


def test_over_budget_message_names_every_size() -> None:
    with pytest.raises(HotsetError) as err:
        refuse_over_budget(items=2, adding=3000, used=8000, capacity=10_000)
    assert str(err.value) == (
        "cache put refused: 2 item(s) adding 3000 bytes (2.9 KiB) to 8000 bytes used "
        "would exceed capacity_bytes=10000 (9.8 KiB)"
    )
