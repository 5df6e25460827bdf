"""The loader over a data set in a real S3 server (tests/s3_support.py): byte-exact
epochs, and storage requests and bytes in its report that are the server's own counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_support import epoch_once_byte_exact, run_epoch

import hotset
from hotset.data.upload import upload_dataset
from hotset.storage.retry import RetryingStore
from hotset.storage.s3_store import S3Store
from packed_support import packed_synth
from s3_support import S3Bucket


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """160 small PNGs packed 16 per chunk (chunked systems read them by chunk or range)."""
    return packed_synth(tmp_path_factory.mktemp("s3ds") / "ds", n=160, seed=3, chunk_size=16)


def _in_s3(packed: Path, bucket: S3Bucket) -> str:
    url = bucket.url("ds")
    upload_dataset(packed, url)
    return url


def _totals(rows: list[dict[str, int]]) -> tuple[int, int]:
    return (
        sum(r["storage_requests"] + r["rebuild_reads"] for r in rows),
        sum(r["storage_bytes"] + r["rebuild_bytes"] for r in rows),
    )


@pytest.mark.parametrize("workers", [0, 2])
def test_s3_loader_epochs_are_byte_exact_and_counted_as_the_server_counts(
    packed: Path, s3_bucket: S3Bucket, workers: int
) -> None:
    url = _in_s3(packed, s3_bucket)
    data = hotset.open_dataset(url, decode="bytes")
    assert isinstance(data.store, RetryingStore) and isinstance(data.store.inner, S3Store)
    truth = [data.store.read(k) for k in data.manifest.keys]
    before = s3_bucket.counts()
    with hotset.loader(
        data, system="lru", cache=0.25, batch_size=16, num_workers=workers, seed=1,
        check_store="off",
    ) as loader:  # fmt: skip
        for epoch in range(2):
            epoch_once_byte_exact(loader, epoch, truth)
        rows = loader.report()
    served = s3_bucket.counts() - before
    requests, nbytes = _totals(rows)
    assert rows[0]["storage_requests"] == len(truth)  # a cold cache reads every sample once
    assert (served.requests, served.bytes) == (requests, nbytes)


@pytest.mark.parametrize("system", ["scout", "brand", "quiver"])
def test_s3_chunk_and_ranged_reads_are_the_gets_the_server_answered(
    packed: Path, s3_bucket: S3Bucket, system: str
) -> None:
    """Brand and Quiver read whole chunks (one GET each); Scout reads runs of a chunk's
    members, one ranged GET per contiguous run, and its report counts each GET."""
    url = _in_s3(packed, s3_bucket)
    data = hotset.open_dataset(url, decode="bytes")
    assert data.layout is not None and data.layout.n_chunks == 10
    before = s3_bucket.counts()
    with hotset.loader(
        data, system=system, cache=0.2, batch_size=16, num_workers=2, seed=2, check_store="off"
    ) as loader:
        for epoch in range(2):
            run_epoch(loader, epoch)
        rows = loader.report()
    served = s3_bucket.counts() - before
    requests, nbytes = _totals(rows)
    assert (served.requests, served.bytes) == (requests, nbytes)
    if system != "scout":
        assert sum(r["unit_reads"] for r in rows) > 0
