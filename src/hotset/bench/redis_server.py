"""A throwaway redis-server on loopback for benchmarks (never for users' data).

Benchmarks that measure Redis (bandwidth, fault recovery) start their own
server so that a figure never depends on what else a shared server holds:
no persistence, a free port, a temporary directory. :meth:`LocalRedis.restart`
starts a fresh, empty server on the same port, the way an operator restarts a
crashed one under the URL its clients already hold.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hotset.errors import HotsetError

__all__ = ["LocalRedis", "free_port", "local_redis"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalRedis:
    """One redis-server process on ``127.0.0.1:port``."""

    def __init__(
        self, binary: str, directory: str, port: int | None = None, extra: tuple[str, ...] = ()
    ) -> None:
        self.binary = binary
        #: more server arguments (an evicting server: ``--maxmemory 3mb ...``)
        self.extra = extra
        self.directory = directory
        self.port = free_port() if port is None else port
        self.process = self._spawn()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _spawn(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.directory,
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
        )
        self._wait_ready(proc)
        return proc

    def _wait_ready(self, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise HotsetError(f"redis-server on port {self.port} did not start")
            time.sleep(0.05)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)

    def restart(self) -> None:
        """A fresh, empty server on the same port (the old one killed first if alive)."""
        if self.process.poll() is None:
            self.kill()
        self.process = self._spawn()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@contextmanager
def local_redis(*extra: str) -> Iterator[LocalRedis]:
    """A redis-server for the block (``extra``: more server arguments); a
    :class:`HotsetError` if none is installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise HotsetError("redis-server is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        server = LocalRedis(binary, tmp, extra=extra)
        try:
            yield server
        finally:
            server.stop()
