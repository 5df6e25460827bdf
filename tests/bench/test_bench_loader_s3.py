"""``hotset bench loader`` over the real S3 test server (tests/s3_support.py), tiny scale:
every row's requests and bytes are the ones the server counted for the bucket."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_cli
from hotset.bench.loader_s3 import run_s3
from hotset.data.upload import upload_dataset
from packed_support import packed_synth
from s3_support import S3Bucket


def _packed_in_s3(tmp_path: Path, bucket: S3Bucket) -> str:
    local = packed_synth(tmp_path / "ds", n=96, seed=4, chunk_size=16)
    url = bucket.url("bench")
    upload_dataset(local, url)
    return url


def test_s3_bench_rows_count_what_the_server_counted(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    url = _packed_in_s3(tmp_path, s3_bucket)
    result = run_s3(
        url,
        server_metrics=s3_bucket.server.metrics_url,
        workers=0,
        batch_size=16,
        compute_ms=0.0,
        epochs=2,
        systems=("pytorch", "quiver", "scout", "brand"),
    )
    rows = {row["name"]: row for row in result["table"]}
    assert list(rows) == ["torch", "pytorch", "quiver", "scout", "brand", "no-io"]
    for name in ("torch", "pytorch", "quiver", "scout", "brand"):
        row = rows[name]
        assert row["server_requests"] == row["storage_requests"], name
        assert row["server_bytes"] == row["storage_bytes"], name
        assert (
            row["requests_per_epoch"]
            == row["server_requests_per_epoch"]
            == (row["storage_requests"] / 2)
        )
    assert rows["torch"]["storage_requests"] == 2 * 96  # one GET per sample per epoch
    assert rows["brand"]["unit_reads"] > 0
    assert result["params"]["store"] == "a real S3 server: no modeled latency, no throttling"


def test_s3_bench_cli_writes_the_server_counts_and_refuses_a_model(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    url = _packed_in_s3(tmp_path, s3_bucket)
    args = ("bench", "loader", "--dataset", url, "--workers", "0", "--epochs", "1",
            "--compute-ms", "0", "--batch-size", "16", "--root", str(tmp_path / "out"))  # fmt: skip
    code, out = run_cli(*args, "--latency-ms", "2")
    assert code == 2 and "--latency-ms models a store" in out
    code, out = run_cli(*args, "--systems", "pytorch,brand", "--name", "loader-s3",
                        "--server-metrics", s3_bucket.server.metrics_url)  # fmt: skip
    assert code == 0, out
    assert "server_req/ep" in out and "server_MB/ep" in out
    saved = json.loads((tmp_path / "out/benchmarks/results/loader-s3.json").read_text())
    for row in saved["result"]["table"][:-1]:  # all but no-io
        assert row["server_requests"] == row["storage_requests"] > 0
    assert s3_bucket.server.secret_key not in json.dumps(saved)
