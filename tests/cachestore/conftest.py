"""Real Redis servers for the cache-store tests: one server and a three-master cluster.

Both run on free loopback ports with persistence off and die at teardown. A
missing ``redis-server`` fails the tests (it does not skip them): CI installs
it (``make test`` runs ``make redis-check``), and a skipped backend would pass
silently.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from cachestore_support import RedisCluster, RedisProcess, SendCounter

_START_TIMEOUT = 15.0


def _require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(
            f"{binary} is not on PATH: the cache-store tests need a real Redis "
            "(Debian/Ubuntu: apt-get install redis-server; `make test` installs it)",
            pytrace=False,
        )
    return path


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(*, bus: bool = False) -> int:
    """A free loopback port; with ``bus`` also port + 10000 (the cluster bus) is free."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if not bus or (port + 10000 < 65536 and _port_free(port + 10000)):
            return port
    raise RuntimeError("no free loopback port pair found")


def start_redis(workdir: Path, *extra: str, bus: bool = False) -> RedisProcess:
    """Start ``redis-server`` on a free loopback port and wait until it answers PING."""
    binary = _require("redis-server")
    port = free_port(bus=bus)
    log = workdir / f"redis-{port}.log"
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    args += ["--dir", str(workdir), "--logfile", str(log), *extra]
    proc = RedisProcess(port, subprocess.Popen(args, stdout=subprocess.DEVNULL), log)
    deadline = time.monotonic() + _START_TIMEOUT
    client = proc.client()
    while True:
        if proc.process.poll() is not None:
            text = log.read_text() if log.exists() else ""
            pytest.fail(f"redis-server on port {port} exited: {text[-2000:]}", pytrace=False)
        try:
            if client.ping():
                return proc
        except redis.exceptions.ConnectionError:
            pass
        if time.monotonic() > deadline:
            proc.stop()
            pytest.fail(f"redis-server on port {port} did not answer PING", pytrace=False)
        time.sleep(0.02)


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


def _cluster_ok(nodes: list[RedisProcess]) -> bool:
    for node in nodes:
        info: Any = node.client().execute_command("CLUSTER", "INFO")
        text = info.decode() if isinstance(info, bytes) else str(info)
        if "cluster_state:ok" not in text or "cluster_slots_assigned:16384" not in text:
            return False
    return True


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """Three masters, no replicas, on loopback ports; ``cluster_state:ok`` before use."""
    cli = _require("redis-cli")
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
        deadline = time.monotonic() + _START_TIMEOUT
        while not _cluster_ok(nodes):
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


@pytest.fixture
def send_counter(monkeypatch: pytest.MonkeyPatch) -> SendCounter:
    """Wrap redis-py's connection so every request written to a socket is counted."""
    counter = SendCounter()
    original = redis.connection.AbstractConnection.send_packed_command

    def counting(self: Any, command: Any, check_health: bool = True) -> None:
        port = int(getattr(self, "port", 0))
        counter.by_port[port] = counter.by_port.get(port, 0) + 1
        original(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counting)
    return counter
