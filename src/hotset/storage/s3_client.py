"""The S3 store's plumbing: its URL, its boto3 client, and what its errors become.

Credentials and endpoint come from boto3's standard chain and nowhere else:
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``,
``AWS_PROFILE`` (or ``profile=``) with ``~/.aws/config`` and
``~/.aws/credentials`` (``AWS_CONFIG_FILE`` and ``AWS_SHARED_CREDENTIALS_FILE``
move them), instance and container roles; the endpoint from ``endpoint_url=``,
else ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL`` or a profile's
``endpoint_url`` (an S3-compatible server: SeaweedFS, MinIO, Ceph). hotset
never takes a key as an argument and keeps none: a store pickled into a
DataLoader worker carries its URL and options, and the worker's boto3 finds
the credentials again in the same environment.

Never printed: error messages name the operation, the bucket and key, the
server's error code and HTTP status, and the endpoint (without any user info);
they are built here, not taken from botocore's text, and any text the server
sent is scrubbed of the access key id and secret in use.

botocore's own retries are off (one attempt per call), so every call is one
HTTP request and a request counted is a request the server saw. Transient
failures (throttling, 5xx, timeouts, a dropped or truncated response) become
:class:`S3TransientError`, an :class:`OSError` that
:class:`~hotset.storage.retry.RetryingStore` retries with backoff and counts;
permanent ones (a missing key or bucket, a refused credential) are a
:class:`~hotset.errors.HotsetError` that names what is wrong and is not retried.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

from hotset.errors import HotsetError, StorageError
from hotset.storage.base import check_key

__all__ = ["ClientOptions", "S3TransientError", "make_client", "parse_s3_url", "translate"]

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
#: S3 error codes a retry may cure (throttling, server trouble, a slow request)
_TRANSIENT_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "ServiceUnavailable",
        "InternalError",
        "RequestTimeout",
        "RequestTimeTooSkewed",
        "OperationAborted",
    }
)
_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_MISSING_CODES = frozenset({"NoSuchKey", "NotFound", "404"})
_DENIED_CODES = frozenset(
    {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "403"}
)


class S3TransientError(OSError):
    """A request that failed for a reason that may pass (retried by RetryingStore)."""


def parse_s3_url(url: str) -> tuple[str, str]:
    """``("bucket", "prefix/")`` for ``s3://bucket/prefix`` (``""`` for a bare bucket)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme != "s3":
        raise HotsetError(f"not an S3 URL: {url!r} (expected s3://bucket/prefix)")
    bucket, _, prefix = rest.partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise HotsetError(
            f"bad S3 bucket name {bucket!r} in {url!r}: 3 to 63 lower-case letters, digits, "
            "'.' and '-'"
        )
    prefix = prefix.rstrip("/")
    if prefix:
        try:
            check_key(prefix)
        except HotsetError:
            raise HotsetError(
                f"bad S3 prefix {prefix!r} in {url!r}: '/'-separated names, no empty, "
                "'.' or '..' parts"
            ) from None
        prefix += "/"
    return bucket, prefix


@dataclass(frozen=True)
class ClientOptions:
    """What the client is made from (no credentials: see the module)."""

    profile: str | None = None
    endpoint_url: str | None = None
    region: str | None = None
    max_connections: int = 32
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 60.0
    addressing_style: str | None = None


def make_client(options: ClientOptions) -> Any:
    """A boto3 S3 client from the standard chain, botocore's retries off."""
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError
    except ImportError as exc:
        raise HotsetError(f"s3:// needs boto3 ({exc}); to fix: pip install hotset[s3]") from None
    config = Config(
        retries={"total_max_attempts": 1},
        max_pool_connections=options.max_connections,
        connect_timeout=options.connect_timeout_s,
        read_timeout=options.read_timeout_s,
        s3={"addressing_style": options.addressing_style} if options.addressing_style else None,
    )
    try:
        session = boto3.session.Session(profile_name=options.profile)
        return session.client(
            "s3", endpoint_url=options.endpoint_url, region_name=options.region, config=config
        )
    except BotoCoreError as exc:  # an unknown profile, a broken config file
        raise HotsetError(f"cannot make an S3 client: {type(exc).__name__}: {exc}") from None


def endpoint_of(client: Any) -> str:
    """The client's endpoint without any ``user:password@``."""
    parts = urllib.parse.urlsplit(str(client.meta.endpoint_url))
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _secrets_of(client: Any) -> list[str]:
    """The access key id and secret the client signs with (only to scrub them from text)."""
    try:
        creds = client._request_signer._credentials
        frozen = creds.get_frozen_credentials() if creds is not None else None
    except Exception:  # scrubbing must never fail the error it reports
        return []
    if frozen is None:
        return []
    return [s for s in (frozen.access_key, frozen.secret_key, frozen.token) if s]


def scrub(text: str, client: Any) -> str:
    for secret in _secrets_of(client):
        text = text.replace(secret, "***")
    return text


def translate(exc: BaseException, *, client: Any, what: str, where: str) -> BaseException:
    """The exception hotset raises for ``exc`` (see the module); ``what`` is the operation
    (``"reading"``), ``where`` the ``s3://bucket/key`` it was for."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionClosedError,
        CredentialRetrievalError,
        HTTPClientError,
        IncompleteReadError,
        NoCredentialsError,
        PartialCredentialsError,
    )
    from botocore.exceptions import ConnectionError as BotoConnectionError

    endpoint = endpoint_of(client)
    if isinstance(exc, ClientError):
        return _client_error(exc, client=client, what=what, where=where)
    if isinstance(exc, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
        return HotsetError(
            f"{what} {where}: no usable S3 credentials ({type(exc).__name__}); set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with ~/.aws/credentials"
        )
    transient = (BotoConnectionError, HTTPClientError, ConnectionClosedError, IncompleteReadError)
    if isinstance(exc, transient):
        return S3TransientError(f"{what} {where} at {endpoint}: {type(exc).__name__}")
    if isinstance(exc, BotoCoreError):
        return HotsetError(f"{what} {where} at {endpoint}: {type(exc).__name__}")
    return exc


def _client_error(exc: Any, *, client: Any, what: str, where: str) -> BaseException:
    error = exc.response.get("Error", {}) or {}
    code = str(error.get("Code", "") or "")
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    said = scrub(str(error.get("Message", "") or ""), client)[:200]
    named = code if code and not code.isdigit() else ""  # a HEAD's error has no code
    head = f"{what} {where} at {endpoint_of(client)}: HTTP {status}" + (
        f" {named}" if named else ""
    )
    if said and said not in ("Not Found", "Forbidden"):
        head += f": {said}"
    if code in _TRANSIENT_CODES or status in _TRANSIENT_STATUS:
        return S3TransientError(head)
    if code == "NoSuchBucket":
        return HotsetError(f"{head}; the bucket does not exist")
    if code in _MISSING_CODES or status == 404:
        return HotsetError(f"{head}; no such key")
    if code in _DENIED_CODES or status == 403:
        return StorageError(
            f"{head}; the server refused the credentials (check AWS_ACCESS_KEY_ID, "
            "AWS_SECRET_ACCESS_KEY or AWS_PROFILE, and the bucket's policy)"
        )
    return StorageError(head)
