"""Open a store from a path or URL, choosing the implementation by URL scheme.

A plain path or ``file://`` is a :class:`LocalStore` (no fsspec overhead);
``s3://`` is an :class:`~hotset.storage.s3_store.S3Store` (boto3: one counted GET
per request, see its module for why not fsspec's s3fs); ``memory://`` and every
other protocol fsspec knows is an :class:`FsspecStore`. The scheme is checked here, against this registry and
fsspec's table of known protocols, so ``s4://bucket`` fails when the store is
opened, with the list of schemes that would have worked, rather than somewhere
inside fsspec at the first read. Back ends stay lazy: naming ``s3://`` imports
boto3 only when such a store is opened.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hotset.errors import HotsetError
from hotset.registry import Registry
from hotset.storage.base import Store

StoreFactory = Callable[..., Store]

#: URL scheme -> ``factory(url, **options)`` (:class:`~hotset.registry.Registry`)
STORES: Registry[StoreFactory] = Registry("URL scheme", check=callable)


def register_scheme(scheme: str, factory: StoreFactory, *, replace: bool = False) -> None:
    """Make ``scheme://...`` URLs open with ``factory(url, **options)``.

    Registering the same factory again is a no-op; another factory for a scheme that
    has one needs ``replace=True``: a plug-in that silently took ``s3`` from the
    built-in store would change every job's reads without a word.
    """
    if not isinstance(scheme, str) or not scheme or "://" in scheme or "::" in scheme:
        raise HotsetError(f"bad URL scheme {scheme!r}: give the bare name, e.g. 's3'")
    STORES.register(scheme, factory, replace=replace)


def _fsspec_protocols() -> set[str]:
    from fsspec.registry import known_implementations, registry

    return set(known_implementations) | set(registry)


def known_schemes() -> list[str]:
    """Every scheme :func:`open_store` accepts, sorted."""
    return sorted(set(STORES.names()) | _fsspec_protocols())


def split_scheme(url: str) -> tuple[str, str]:
    """``("s3", "bucket/x")`` for ``"s3://bucket/x"``; ``("", url)`` for a plain path.

    Chained fsspec URLs (``simplecache::s3://b``) report the whole chain as the
    scheme; each link is checked on its own by :func:`open_store`.
    """
    if "://" not in url:
        return "", url
    scheme, rest = url.split("://", 1)
    return scheme, rest


def _open_local(url: str, **options: Any) -> Store:
    from hotset.storage.local import LocalStore

    create = bool(options.pop("create", False))
    if options:
        raise HotsetError(f"local store {url!r} takes no options {sorted(options)}; only create=")
    _, sep, rest = url.partition("://")
    path = rest if sep else url
    return LocalStore(path, create=create)


#: the options :func:`open_store` passes to :class:`~hotset.storage.s3_store.S3Store`
S3_OPTIONS = (
    "create",
    "profile",
    "endpoint_url",
    "region",
    "max_connections",
    "connect_timeout_s",
    "read_timeout_s",
    "addressing_style",
)


def _open_s3(url: str, **options: Any) -> Store:
    from hotset.errors import did_you_mean
    from hotset.storage.s3_store import S3Store

    for name in options:
        if name not in S3_OPTIONS:
            raise HotsetError(
                f"s3 store {url!r} takes no option {name!r}{did_you_mean(name, S3_OPTIONS)}; "
                f"its options are {', '.join(S3_OPTIONS)} (credentials come from the "
                "environment, never from options)"
            )
    return S3Store(url, **options)


def _open_fsspec(url: str, **options: Any) -> Store:
    from hotset.storage.fsspec_store import FsspecStore

    create = bool(options.pop("create", False))
    return FsspecStore(url, create=create, storage_options=options)


register_scheme("file", _open_local)
register_scheme("local", _open_local)
register_scheme("s3", _open_s3)


def open_store(url_or_path: str | os.PathLike[str], **options: Any) -> Store:
    """Open the store at ``url_or_path``.

    ``create=True`` makes the root if missing (an S3 bucket); for ``s3://`` the other
    options are :data:`S3_OPTIONS` (credentials come from the environment only), for
    other remote schemes fsspec storage options (``endpoint_url``, ``anon``).
    """
    url = os.fspath(url_or_path)
    if not isinstance(url, str):
        raise HotsetError(f"store location must be a path or URL string, got {url!r}")
    if not url:
        raise HotsetError("store location is empty: give a directory or a URL")
    scheme, _ = split_scheme(url)
    if not scheme:
        return _open_local(url, **options)
    links = scheme.split("::")
    fsspec_known = _fsspec_protocols()
    for link in links:
        if link not in STORES and link not in fsspec_known:
            known = ", ".join(known_schemes())
            raise HotsetError(f"unknown URL scheme {link!r} in {url!r}; known: {known}")
    factory = STORES.get(scheme) if scheme in STORES else _open_fsspec
    return factory(url, **options)
