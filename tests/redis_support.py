"""Real Redis servers for tests: one server and a three-master cluster on loopback.

Both run on free ports with persistence off and die at teardown. A missing
``redis-server`` fails the tests (it does not skip them): ``make test`` installs
it, and a skipped backend would pass silently. The fixtures are in
tests/conftest.py; spawned child processes may import this module.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis


@dataclass
class RedisProcess:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


@dataclass
class RedisCluster:
    nodes: list[RedisProcess]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    @property
    def node_list(self) -> list[str]:
        return [f"127.0.0.1:{n.port}" for n in self.nodes]

    def flushall(self) -> None:
        for node in self.nodes:
            node.client().flushall()


START_TIMEOUT = 15.0


def require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(
            f"{binary} is not on PATH: the Redis tests need a real Redis "
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
    binary = require("redis-server")
    port = free_port(bus=bus)
    log = workdir / f"redis-{port}.log"
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    args += ["--dir", str(workdir), "--logfile", str(log), *extra]
    proc = RedisProcess(port, subprocess.Popen(args, stdout=subprocess.DEVNULL), log)
    deadline = time.monotonic() + START_TIMEOUT
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


def start_evicting_redis(
    workdir: Path,
    *,
    maxmemory: str = "3mb",
    policy: str = "allkeys-lru",
    extra: tuple[str, ...] = (),
) -> RedisProcess:
    """A server that evicts keys on its own once it holds ``maxmemory`` (as a cache
    server configured for other tenants may): what hotset must survive, not ask for."""
    return start_redis(workdir, "--maxmemory", maxmemory, "--maxmemory-policy", policy, *extra)


def cluster_ok(nodes: list[RedisProcess]) -> bool:
    for node in nodes:
        info: Any = node.client().execute_command("CLUSTER", "INFO")
        text = info.decode() if isinstance(info, bytes) else str(info)
        if "cluster_state:ok" not in text or "cluster_slots_assigned:16384" not in text:
            return False
    return True
