"""Cache specs as error messages may show them: every password replaced by ``***``.

A Redis spec carries its credentials in three places, and every one must stay
out of errors, warnings and reprs (they end up in logs, CI output, bug reports):

* the URL's userinfo, ``redis://user:secret@host:6379/0`` (also ``rediss://``,
  ``unix://``, ``redis+cluster://user:secret@h1:p1,h2:p2``);
* its query, ``redis://host:6379/0?password=secret`` -- redis-py reads
  ``password`` (and ``ssl_password``) from there, so a user may well put it
  there;
* each item of a list of cluster nodes, ``["redis://:secret@h1:7000", "h2:7001"]``.

Why text surgery rather than ``urllib.parse``: an error message is most often
about a spec that does not parse (a bad port, a stray ``[``, a reserved
character left unencoded in a password), and that is exactly when a parser
gives up or splits the password in two. So the userinfo is everything up to
the last ``@`` of the authority -- or, when it cannot be told where the
authority ends, of the whole spec: over-redacting a host in an error message
costs a little, printing half a password does not -- and a query option whose
name contains ``pass``, ``secret``, ``token`` or ``auth`` has its value hidden.
A user name is kept (it is not a secret, and it tells which account failed).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence

__all__ = ["MASK", "redact", "redact_spec_value", "scrub", "secrets_in", "split_userinfo"]

#: what replaces a secret
MASK = "***"
#: query option names holding a secret (substrings, case-insensitive)
_SECRET_WORDS = ("pass", "secret", "token", "auth")


def _is_secret(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def _redact_query(query: str) -> str:
    """``a=1&password=x`` -> ``a=1&password=***`` (only the secret options' values)."""
    parts = []
    for pair in query.split("&"):
        name, eq, _ = pair.partition("=")
        parts.append(f"{name}={MASK}" if eq and _is_secret(name) else pair)
    return "&".join(parts)


def split_userinfo(url: str) -> tuple[str, str | None, str]:
    """(``scheme://``, the userinfo or None, what follows it), by the rule above.

    The userinfo ends at the last ``@`` before the query; with no ``@`` there,
    an ``@`` further on may still close a password holding an unencoded ``?``.
    hotset's own parse of a cluster URL uses the same rule, so the part this
    hides is exactly the part that is used as credentials.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    query_at = rest.find("?")
    head = rest if query_at < 0 else rest[:query_at]
    at = head.rfind("@")
    if at < 0:
        at = rest.rfind("@")
    if at < 0:
        return f"{scheme}{sep}", None, rest
    return f"{scheme}{sep}", rest[:at], rest[at + 1 :]


def redact(url: str) -> str:
    """``url`` with the password of its userinfo and of its query replaced by ``***``.

    Also for a bare ``host:port`` node (nothing to hide) and for text that is
    no URL at all (a typo): whatever stands before an ``@`` after a ``:`` is hidden.
    """
    if not isinstance(url, str):
        return f"<{type(url).__name__}>"
    head, userinfo, rest = split_userinfo(url)
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        head += f"{user}:{MASK}@" if colon else f"{user}@"
    where, qmark, query = rest.partition("?")
    if qmark:
        where = f"{where}?{_redact_query(query)}"
    return f"{head}{where}"


def redact_spec_value(spec: object) -> str:
    """A cache spec of any type as an error message may show it: never a password.

    A string is :func:`redact`-ed, a list or tuple of nodes item by item, and
    anything else is named by its type only (its repr could hold anything).
    """
    if isinstance(spec, str):
        return repr(redact(spec))
    if isinstance(spec, Sequence) and not isinstance(spec, bytes | bytearray):
        items = [repr(redact(s)) if isinstance(s, str) else f"<{type(s).__name__}>" for s in spec]
        return f"[{', '.join(items)}]"
    if isinstance(spec, int | float | bool) or spec is None:
        return repr(spec)
    return f"<{type(spec).__name__}>"


def secrets_in(spec: object) -> tuple[str, ...]:
    """The passwords a spec holds (userinfo and secret query options, raw and decoded).

    For scrubbing text that did not come from the spec's own formatting -- a
    client library's error message -- where :func:`redact` cannot tell a
    password from anything else.
    """
    found: set[str] = set()
    for url in [spec] if isinstance(spec, str) else spec if isinstance(spec, list | tuple) else []:
        if not isinstance(url, str):
            continue
        _, userinfo, rest = split_userinfo(url)
        if userinfo is not None:
            password = userinfo.partition(":")[2]
            found.update({password, urllib.parse.unquote(password)})
        for pair in rest.partition("?")[2].split("&"):
            name, eq, value = pair.partition("=")
            if eq and _is_secret(name):
                found.update({value, urllib.parse.unquote_plus(value)})
    return tuple(sorted((s for s in found if s), key=len, reverse=True))


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``***`` (longest first)."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text
