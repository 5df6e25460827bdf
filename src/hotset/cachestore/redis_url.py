"""What a Redis cache spec says: the server or cluster nodes, credentials, timeouts.

A spec is a URL (``redis://``, ``rediss://``, ``unix://`` for one server,
``redis+cluster://h1:p1,h2:p2`` or ``rediss+cluster://`` for a cluster) or a
list of ``host:port`` cluster startup nodes (each may be a URL carrying
credentials). The two timeouts may ride in the URL's query
(``redis://h:p/0?socket_timeout=0.5``), which is how a cache spec string
carries them; options given as keywords win.

Parsing only: nothing here connects. Every error names the spec with its
passwords redacted (:mod:`hotset.cachestore.redaction`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from typing import Any

from hotset.cachestore.redaction import redact, redact_spec_value, split_userinfo
from hotset.errors import HotsetError

#: default seconds to connect; a loopback or LAN server answers in milliseconds
CONNECT_TIMEOUT_SECONDS = 1.0
#: default seconds to wait for a reply: a batch's pipeline moves a few MB, while a
#: frozen server should cost a worker this long at most before it falls back to storage
SOCKET_TIMEOUT_SECONDS = 5.0
#: the timeouts a URL's query may carry (redis-py's own option names)
TIMEOUT_OPTIONS = ("socket_timeout", "socket_connect_timeout")
SINGLE_SCHEMES = ("redis", "rediss", "unix")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")


def is_redis_spec(spec: object) -> bool:
    """True for a Redis URL, a cluster URL, or a list of cluster startup nodes."""
    if isinstance(spec, str):
        return urllib.parse.urlsplit(spec).scheme in SINGLE_SCHEMES + CLUSTER_SCHEMES
    return isinstance(spec, list | tuple) and bool(spec) and all(isinstance(s, str) for s in spec)


def identify(url_or_urls: object) -> tuple[str | list[str], bool, str]:
    """(the spec as kept, whether it names a cluster, where it is without passwords)."""
    if isinstance(url_or_urls, str):
        scheme = urllib.parse.urlsplit(url_or_urls).scheme
        if scheme not in SINGLE_SCHEMES + CLUSTER_SCHEMES:
            raise HotsetError(
                f"redis cache: unsupported URL {redact(url_or_urls)!r} (use redis://, "
                "rediss://, unix://, redis+cluster:// or a list of cluster nodes)"
            )
        return url_or_urls, scheme in CLUSTER_SCHEMES, redact(url_or_urls)
    if is_redis_spec(url_or_urls):
        assert isinstance(url_or_urls, list | tuple)
        nodes = list(url_or_urls)
        return nodes, True, "redis cluster " + ",".join(redact(s) for s in nodes)
    raise HotsetError(
        "redis cache: expected a URL or a list of 'host:port' cluster nodes, "
        f"got {redact_spec_value(url_or_urls)}"
    )


def host_port(text: str, *, spec: str) -> tuple[str, int]:
    """``host:port`` (an IPv6 host in brackets) of one cluster node, checked."""
    host, sep, port_text = text.strip().rpartition(":")
    host = host.strip("[]")
    # isascii: str.isdigit accepts digits such as "²" that int() then refuses
    ok_digits = port_text.isascii() and port_text.isdigit()
    if not sep or not host or not ok_digits or not 0 < int(port_text) < 65536:
        raise HotsetError(f"redis cluster node {redact(text)!r} in {spec}: expected host:port")
    return host, int(port_text)


def auth_options(scheme: str, userinfo: str | None, query: str) -> dict[str, Any]:
    """``username``/``password`` of a URL's userinfo (or, as redis-py reads a server's
    URL, of its query), and ``ssl`` for a ``rediss`` scheme."""
    options: dict[str, Any] = {}
    if userinfo:
        user, _, password = userinfo.partition(":")
        if user:
            options["username"] = urllib.parse.unquote(user)
        if password:
            options["password"] = urllib.parse.unquote(password)
    for name, value in urllib.parse.parse_qsl(query):
        if name in ("username", "password"):
            options[name] = value
    if scheme.startswith("rediss"):
        options["ssl"] = True
    return options


def parse_cluster(spec: str | Sequence[str]) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """Startup nodes and connection options from a cluster URL or a node list.

    A node of a list may be a URL (``redis://user:secret@h:p``): its credentials
    (and ``rediss``'s TLS) apply to the whole cluster, so nodes that give other
    ones are refused rather than one of them silently ignored. The userinfo is
    found as :func:`~hotset.cachestore.redaction.split_userinfo` finds it, so
    every error names the spec without what is used as a password.
    """
    where = redact_spec_value(spec)
    options: dict[str, Any] = {}
    items = [spec] if isinstance(spec, str) else list(spec)
    nodes = []
    for item in items:
        head, userinfo, rest = split_userinfo(item)
        rest, _, query = rest.partition("?")
        hosts, _, path = rest.partition("/")
        if isinstance(spec, str) and path not in ("", "0"):
            raise HotsetError(f"redis cluster {where}: a cluster has only database 0")
        for name, value in auth_options(head, userinfo, query).items():
            if options.setdefault(name, value) != value:
                raise HotsetError(
                    f"redis cluster {where}: the nodes give different {name} settings; "
                    "give every node the same (or give them on one node only)"
                )
        nodes += [host_port(h, spec=where) for h in hosts.split(",") if h.strip()]
    if not nodes:
        raise HotsetError(f"redis cluster {where}: no startup nodes")
    return nodes, options


def check_timeout(value: object, *, name: str) -> float:
    """``value`` as positive, finite seconds, or an error naming option and value."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise HotsetError(
            f"redis cache: {name} must be a positive number of seconds, got {value!r}"
        )
    return seconds


def split_timeouts(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its timeout options, and those options (query values)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.query:
        return url, {}
    pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    found = {k: v for k, v in pairs if k in TIMEOUT_OPTIONS}
    rest = urllib.parse.urlencode([(k, v) for k, v in pairs if k not in TIMEOUT_OPTIONS])
    return urllib.parse.urlunsplit(parts._replace(query=rest)), found


def resolve_timeouts(
    spec: str | list[str],
    socket_timeout: float | None,
    socket_connect_timeout: float | None,
) -> tuple[str | list[str], float, float]:
    """(the spec to connect with, socket timeout, connect timeout), checked.

    A keyword given wins over the URL's query, which wins over the defaults;
    the timeouts are taken out of the URL handed to the client.
    """
    connect_url = spec
    in_url: dict[str, str] = {}
    if isinstance(spec, str):
        connect_url, in_url = split_timeouts(spec)
    reply = check_timeout(
        socket_timeout
        if socket_timeout is not None
        else in_url.get("socket_timeout", SOCKET_TIMEOUT_SECONDS),
        name="socket_timeout",
    )
    connect = check_timeout(
        socket_connect_timeout
        if socket_connect_timeout is not None
        else in_url.get("socket_connect_timeout", CONNECT_TIMEOUT_SECONDS),
        name="socket_connect_timeout",
    )
    return connect_url, reply, connect
