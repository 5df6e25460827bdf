"""A loader's own Redis namespace is removed when it closes; a named, shared one is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

import hotset
from hotset.data import SynthConfig, make_synth


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ns") / "ds"
    make_synth(path, SynthConfig(n=120, image_size=8, classes=3, seed=1), workers=1)
    return path


def _run(dataset: Path, url: str, namespace: str | None) -> None:
    data = hotset.open_dataset(dataset, decode="bytes")
    with hotset.loader(
        data,
        system="lru",
        cache=url,
        cache_bytes="50%",
        batch_size=16,
        num_workers=2,
        namespace=namespace,
    ) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            for _ in loader:
                pass
        assert loader.report()[-1]["exact_hits"] > 0  # the cache was used


def test_a_private_namespace_leaves_nothing_behind(redis_server, dataset: Path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    client.flushall()
    for _ in range(3):  # three jobs, as a shared test server would see them
        _run(dataset, redis_server.url, None)
    assert client.dbsize() == 0, sorted(client.keys("*"))[:5]


def test_a_named_namespace_is_kept_for_the_next_job(redis_server, dataset: Path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    client.flushall()
    _run(dataset, redis_server.url, "shared-by-name")
    assert client.dbsize() > 0
    assert all(b"shared-by-name" in key for key in client.keys("*"))
