"""``hotset cache ls|gc|rm --redis URL``: a server's hotset namespaces and their leases.

Kept apart from the shared-memory commands because everything here goes
through a Redis client (an optional dependency, imported only with ``--redis``)
and the rules of :mod:`hotset.cachestore.redis_leases`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import click

from hotset.errors import HotsetError
from hotset.units import format_bytes

__all__ = ["redis_gc", "redis_ls", "redis_rm"]


@contextlib.contextmanager
def _client(url: str) -> Iterator[Any]:
    """A client of ``url`` (its errors become HotsetErrors naming the server, not a traceback)."""
    from hotset.cachestore.redis_store import RedisCache

    # A handle on a namespace nobody uses: it only lends its connection and errors.
    cache = RedisCache(url, namespace="hotset-cli", capacity_bytes=0)
    try:
        yield cache.client
    except HotsetError:
        raise
    except Exception as exc:
        raise HotsetError(f"redis at {cache}: {exc}") from None
    finally:
        cache.close()


def _age(expiry: float) -> str:
    if expiry == 0:
        return "never leased"
    ago = time.time() - expiry
    return "leased" if ago < 0 else f"idle {ago:.0f} s"


def redis_ls(url: str, *, as_json: bool) -> None:
    from hotset.cachestore.redis_leases import list_namespaces

    with _client(url) as client:
        infos = list_namespaces(client)
    if as_json:
        click.echo(json.dumps([asdict(i) for i in infos], indent=2))
        return
    if not infos:
        click.echo("no hotset namespaces on this server")
        return
    width = max(len(i.name) for i in infos)
    click.echo(f"{'NAMESPACE':<{width}}  {'KIND':<8}  {'JOBS':>4}  {'BYTES':>10}  STATE")
    for i in infos:
        click.echo(
            f"{i.name:<{width}}  {i.kind:<8}  {i.live_jobs:>4}  "
            f"{format_bytes(i.used_bytes):>10}  {_age(i.last_expiry)}"
        )
    total = sum(i.used_bytes for i in infos)
    dead = sum(i.used_bytes for i in infos if i.abandoned and i.kind == "private")
    click.echo(
        f"{len(infos)} namespaces, {format_bytes(total)}; "
        f"{format_bytes(dead)} in abandoned private ones (hotset cache gc --redis)"
    )


def redis_gc(url: str, *, shared_idle_s: float | None, unknown: bool) -> None:
    from hotset.cachestore.redis_leases import collect
    from hotset.cachestore.session import drop_namespace

    with _client(url) as client:
        removed = collect(
            client,
            drop=lambda name: drop_namespace(url, name),
            shared_idle_s=shared_idle_s,
            unknown=unknown,
            scan=True,
        )
    for info in removed:
        click.echo(f"removed {info.name} ({info.kind}, {format_bytes(info.used_bytes)})")
    freed = sum(i.used_bytes for i in removed)
    click.echo(f"freed {freed} bytes ({format_bytes(freed)}) in {len(removed)} namespaces")


def redis_rm(url: str, name: str, *, force: bool) -> None:
    from hotset.cachestore.redis_leases import list_namespaces, unregister
    from hotset.cachestore.session import drop_namespace

    with _client(url) as client:
        infos = {i.name: i for i in list_namespaces(client)}
        info = infos.get(name)
        if info is None:
            known = ", ".join(sorted(infos)) or "none"
            raise HotsetError(f"no hotset namespace {name!r} on this server (there are: {known})")
        if info.live_jobs and not force:
            raise HotsetError(
                f"namespace {name!r} has {info.live_jobs} live job(s); "
                "use --force to remove it anyway"
            )
        drop_namespace(url, name)
        unregister(client, name)
    click.echo(f"removed {name} ({info.kind}, {info.used_bytes} bytes)")
