"""What an S3 server says it served: GET requests and bytes sent, per bucket.

Why: hotset's loader report counts the storage requests and bytes it asked for;
a benchmark or a test that wants to know those numbers are true needs a count
that hotset did not make. SeaweedFS keeps one, in Prometheus text on its
``/metrics`` endpoint (see :mod:`hotset.bench.s3_server`):

* ``SeaweedFS_s3_request_total{bucket=B,code=C,type="GET"}``: requests served,
  by status code (a HEAD is counted as a GET there too);
* ``SeaweedFS_s3_bucket_traffic_sent_bytes_total{bucket=B}``: response body
  bytes sent.

A counter is bumped as the server finishes a response, which may be a moment
after the client has read it, so :meth:`ServerCounter.snapshot` reads until two
reads agree.
"""

from __future__ import annotations

import re
import time
import urllib.request
from dataclasses import dataclass

from hotset.errors import HotsetError

__all__ = ["ServerCount", "ServerCounter", "parse_counts"]

_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)\{([^}]*)\}\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
REQUESTS = "SeaweedFS_s3_request_total"
SENT_BYTES = "SeaweedFS_s3_bucket_traffic_sent_bytes_total"


@dataclass(frozen=True)
class ServerCount:
    """GET requests (any status) and response bytes one bucket was served."""

    requests: int = 0
    bytes: int = 0

    def __sub__(self, other: ServerCount) -> ServerCount:
        return ServerCount(self.requests - other.requests, self.bytes - other.bytes)


def parse_counts(text: str, bucket: str) -> ServerCount:
    """``bucket``'s GET requests and bytes sent, from a Prometheus text exposition."""
    requests = 0.0
    sent = 0.0
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or match.group(1) not in (REQUESTS, SENT_BYTES):
            continue
        labels = dict(_LABEL.findall(match.group(2)))
        if labels.get("bucket") != bucket:
            continue
        if match.group(1) == SENT_BYTES:
            sent += float(match.group(3))
        elif labels.get("type") == "GET":
            requests += float(match.group(3))
    return ServerCount(int(requests), int(sent))


class ServerCounter:
    """Reads one bucket's counters from a server's metrics URL (loopback, in tests and benches)."""

    def __init__(self, metrics_url: str, bucket: str) -> None:
        if not metrics_url.startswith(("http://", "https://")):
            raise HotsetError(f"server metrics URL must be http(s)://..., got {metrics_url!r}")
        self.metrics_url = metrics_url
        self.bucket = bucket

    def read(self) -> ServerCount:
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=10) as response:
                text = response.read().decode("utf-8", errors="replace")
        except OSError as exc:
            raise HotsetError(
                f"cannot read server metrics at {self.metrics_url!r}: {exc}"
            ) from None
        return parse_counts(text, self.bucket)

    def snapshot(self, *, settle_s: float = 0.05, tries: int = 40) -> ServerCount:
        """The counts once two reads ``settle_s`` apart agree (see the module)."""
        last = self.read()
        for _ in range(tries):
            time.sleep(settle_s)
            now = self.read()
            if now == last:
                return now
            last = now
        return last
