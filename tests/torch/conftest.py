"""Fixtures for the loader tests: a tiny real dataset on disk and real Redis servers.

The dataset is generated once per session (200 PNGs of 8x8 pixels, a few kB in
all). Redis servers run on free loopback ports with persistence off and die at
teardown; a missing ``redis-server`` fails the Redis tests rather than skipping
them, so a missing backend cannot pass silently.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from hotset.data import SynthConfig, make_synth


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("torchds") / "ds"
    make_synth(path, SynthConfig(n=200, image_size=8, classes=4, seed=3), workers=1)
    return path


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]

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


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on PATH: the loader's Redis tests need a real Redis")
    return path


def free_port(*, bus: bool = False) -> int:
    """A free loopback port; with ``bus`` port + 10000 (the cluster bus) is free too."""
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if not bus:
            return port
        if port + 10000 < 65536:
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free loopback port")


def start_server(workdir: Path, *extra: str, bus: bool = False) -> Server:
    port = free_port(bus=bus)
    args = [_binary("redis-server"), "--port", str(port), "--bind", "127.0.0.1"]
    args += ["--save", "", "--appendonly", "no", "--dir", str(workdir), *extra]
    server = Server(port, subprocess.Popen(args, stdout=subprocess.DEVNULL))
    deadline = time.monotonic() + 15
    while True:
        if server.process.poll() is not None:
            pytest.fail(f"redis-server on port {port} exited with {server.process.returncode}")
        try:
            if server.client().ping():
                return server
        except redis.exceptions.ConnectionError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            pytest.fail(f"redis-server on port {port} did not answer PING")
        time.sleep(0.02)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_server(tmp_path_factory.mktemp("torch-redis"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Server]]:
    """Three masters, no replicas, ``cluster_state:ok`` before use."""
    workdir = tmp_path_factory.mktemp("torch-cluster")
    nodes: list[Server] = []
    try:
        for i in range(3):
            nodes.append(
                start_server(
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
            [_binary("redis-cli"), "--cluster", "create"]
            + [f"127.0.0.1:{n.port}" for n in nodes]
            + ["--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if create.returncode != 0:
            pytest.fail(f"redis-cli --cluster create failed: {create.stdout}{create.stderr}")
        deadline = time.monotonic() + 15
        while True:
            infos = [n.client().execute_command("CLUSTER", "INFO") for n in nodes]
            texts = [i.decode() if isinstance(i, bytes) else str(i) for i in infos]
            if all("cluster_state:ok" in t for t in texts):
                break
            if time.monotonic() > deadline:
                pytest.fail("redis cluster did not reach cluster_state:ok")
            time.sleep(0.05)
        yield nodes
    finally:
        for node in nodes:
            node.stop()
