"""Fixtures shared by every test folder: real Redis servers (see redis_support.py) and a
real S3 server (see s3_support.py)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from hotset.bench.s3_server import LocalS3
from redis_support import (
    START_TIMEOUT,
    RedisCluster,
    RedisProcess,
    cluster_ok,
    require,
    start_redis,
)
from s3_support import S3Bucket, new_bucket, point_env_at, start_s3


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """One Redis server for the whole session (tests flush it or use own namespaces)."""
    proc = start_redis(tmp_path_factory.mktemp("redis"))
    yield proc
    proc.stop()


@pytest.fixture
def redis_url(redis_server: RedisProcess) -> str:
    """The session server's URL, flushed before the test."""
    redis_server.client().flushall()
    return redis_server.url


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """Three masters, no replicas, on loopback ports; ``cluster_state:ok`` before use."""
    cli = require("redis-cli")
    workdir = tmp_path_factory.mktemp("redis-cluster")
    nodes: list[RedisProcess] = []
    try:
        for i in range(3):
            nodes.append(
                start_redis(
                    workdir,
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    str(workdir / f"nodes-{i}.conf"),
                    "--cluster-node-timeout",
                    "5000",
                    bus=True,
                )
            )
        create = subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{n.port}" for n in nodes),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if create.returncode != 0:
            pytest.fail(f"redis-cli --cluster create failed: {create.stdout}{create.stderr}")
        deadline = time.monotonic() + START_TIMEOUT
        while not cluster_ok(nodes):
            if time.monotonic() > deadline:
                pytest.fail("redis cluster did not reach cluster_state:ok", pytrace=False)
            time.sleep(0.05)
        yield RedisCluster(nodes)
    finally:
        for node in nodes:
            node.stop()


@pytest.fixture
def cluster(redis_cluster: RedisCluster) -> RedisCluster:
    """The session cluster, flushed before the test."""
    redis_cluster.flushall()
    return redis_cluster


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalS3]:
    """One SeaweedFS S3 server for the whole session (each test takes its own bucket)."""
    server = start_s3(tmp_path_factory.mktemp("s3"))
    yield server
    server.stop()


@pytest.fixture
def s3_bucket(
    s3_server: LocalS3, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> S3Bucket:
    """A fresh bucket, and the AWS environment pointing at the server (see s3_support.py)."""
    point_env_at(monkeypatch, s3_server, tmp_path_factory.mktemp("aws-home"))
    return new_bucket(s3_server)
