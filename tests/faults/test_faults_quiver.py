"""Quiver when its cache server dies mid-epoch (FAST'20 §4.8): no step fails, no sample lost.

The paper masks a lost cache server by substituting from what is left. hotset
keeps the planned order (every sample once) and serves the planned cache reads
that fail from storage, counted as degraded reads; loads into the dead server
are skipped and the cache is used again once it answers.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import hotset
from packed_support import packed_synth
from redis_support import start_redis


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("quiverfault") / "ds", n=240, seed=3, chunk_size=8, shuffle_seed=0
    )


@pytest.mark.parametrize("workers", [0, 2])
def test_killing_the_cache_server_mid_epoch_fails_no_step(
    packed: Path, tmp_path: Path, workers: int
) -> None:
    server = start_redis(tmp_path)
    try:
        data = hotset.open_dataset(packed, decode="bytes")
        n = len(data.manifest)
        truth = [data.store.read(k) for k in data.manifest.keys]
        url = f"{server.url}?socket_timeout=0.3&socket_connect_timeout=0.3"
        with hotset.loader(
            data,
            system="quiver",
            cache=url,
            cache_bytes=0.2,
            batch_size=16,
            num_workers=workers,
            namespace="quiver-fault",
            seed=1,
        ) as loader:
            rows = []
            for epoch in range(3):
                loader.set_epoch(epoch)
                served: list[int] = []
                for step, (x, _y, ids, _w) in enumerate(loader):
                    if epoch == 1 and step == 3:
                        server.process.kill()
                        server.process.wait(timeout=5)
                    assert x == [truth[s] for s in ids.tolist()], f"epoch {epoch} step {step}"
                    served += ids.tolist()
                    time.sleep(0.01)
                assert sorted(served) == list(range(n)), f"epoch {epoch}: not each sample once"
                rows.append(loader.report()[-1])
        warm, hit, down = rows
        assert warm["substitutions"] > 0 and warm["degraded_reads"] == 0
        assert hit["cache_errors"] > 0 and hit["degraded_reads"] > 0
        assert down["degraded_reads"] > 0  # still down: planned cache reads went to storage
        assert all(r["finished"] and r["unique_ids_trained"] == n for r in rows)
    finally:
        server.stop()
