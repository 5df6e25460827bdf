"""``hotset cache``: see and reclaim what hotset caches leave behind.

Why a command: a job killed as a whole process group (Slurm, docker, ``timeout``)
leaves its cache segment in ``/dev/shm``, and a job killed with ``kill -9``
leaves its Redis namespace on the server. The next cache created on the machine
(or the next loader on the server) reclaims them, but an operator wants to see
and free that memory now, without starting a job. The rules are
:mod:`hotset.cachestore.shm_gc`'s for segments (owner identity, what counts as
dead) and :mod:`hotset.cachestore.redis_leases`'s for namespaces (leases).
With ``--redis URL`` the commands act on that server's namespaces.

With ``--data DIR`` they act on the folders hotset leaves in a data directory
(:mod:`hotset.data.leftovers`): the temporary folders of a killed ``hotset data
pack`` and the package folders of a killed iCACHE/ImPACT loader, which take
disk space rather than memory and which no new job might ever come to reclaim.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from hotset.cachestore.shm_gc import (
    SHM_DIR,
    SegmentInfo,
    list_segments,
    reclaim_stale_segments,
    remove_segment,
)
from hotset.cli.cache_data import data_gc, data_ls
from hotset.cli.cache_redis import redis_gc, redis_ls, redis_rm
from hotset.cli.json_option import json_option
from hotset.units import format_bytes

_DIR_OPTION = click.option(
    "--dir",
    "shm_dir",
    default=SHM_DIR,
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the segments live (a tmpfs).",
)


_REDIS_OPTION = click.option(
    "--redis",
    "redis_url",
    default=None,
    metavar="URL",
    help="Act on this Redis server's (or cluster's) namespaces instead of /dev/shm.",
)


_DATA_OPTION = click.option(
    "--data",
    "data_dirs",
    multiple=True,
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False),
    help="Act on the leftover folders in this data directory (a data set's root, or a "
    "loader's package_dir) instead of /dev/shm; may be given several times.",
)


@click.group("cache")
def cache() -> None:
    """Inspect and reclaim hotset caches: shared-memory segments, or Redis namespaces.

    Without --redis, segments named hotset_* in /dev/shm are listed and collected.
    With --redis URL, that server's hotset namespaces: private ones (a loader's
    own, removed when it closes) and shared ones (named with namespace=, kept
    for the next job), each with its live jobs (leases) and bytes. With --data
    DIR, the folders killed jobs left in a data directory: `hotset data pack`'s
    .chunks.*.tmp and iCACHE/ImPACT loaders' .hotset-packages/* folders.
    """


def _owner(info: SegmentInfo) -> str:
    return "-" if info.owner_pid is None else str(info.owner_pid)


def _check_one_target(redis_url: str | None, data_dirs: tuple[str, ...]) -> None:
    if redis_url is not None and data_dirs:
        raise click.UsageError("give --redis URL or --data DIR, not both")


@cache.command("ls")
@_DIR_OPTION
@_REDIS_OPTION
@_DATA_OPTION
@json_option("Print a JSON list instead of a table.")
def ls(shm_dir: str, redis_url: str | None, data_dirs: tuple[str, ...], as_json: bool) -> None:
    """List hotset segments (name, size, owner pid, alive), Redis namespaces, or the
    leftover folders in data directories."""
    _check_one_target(redis_url, data_dirs)
    if redis_url is not None:
        redis_ls(redis_url, as_json=as_json)
        return
    if data_dirs:
        data_ls(data_dirs, as_json=as_json)
        return
    infos = list_segments(shm_dir)
    if as_json:
        click.echo(json.dumps([asdict(i) for i in infos], indent=2))
        return
    if not infos:
        click.echo(f"no hotset segments in {shm_dir}")
        return
    width = max(len(i.name) for i in infos)
    click.echo(f"{'NAME':<{width}}  {'SIZE':>10}  {'OWNER':>8}  STATE")
    for i in infos:
        click.echo(
            f"{i.name:<{width}}  {format_bytes(i.size_bytes):>10}  {_owner(i):>8}  "
            f"{i.state} ({i.reason})"
        )
    total = sum(i.size_bytes for i in infos)
    dead = sum(i.size_bytes for i in infos if i.state == "dead")
    click.echo(f"{len(infos)} segments, {format_bytes(total)}; {format_bytes(dead)} reclaimable")


@cache.command("gc")
@_DIR_OPTION
@_REDIS_OPTION
@_DATA_OPTION
@click.option(
    "--shared-idle",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="With --redis: also remove shared namespaces no job has used for this long.",
)
@click.option(
    "--unknown",
    is_flag=True,
    help="With --redis: also remove unregistered namespaces; with --data: also remove "
    "folders that record no owner (both from an older hotset).",
)
def gc(
    shm_dir: str,
    redis_url: str | None,
    data_dirs: tuple[str, ...],
    shared_idle: float | None,
    unknown: bool,
) -> None:
    """Remove the segments whose owner process is dead, abandoned Redis namespaces, or
    the leftover folders of dead jobs in data directories.

    Segments of live owners, of owners in another pid namespace and of unknown
    owners are kept (use `hotset cache rm --force NAME` for those). With --redis,
    private namespaces whose lease has lapsed are removed; shared ones are kept
    for the next job unless --shared-idle says how long is too long. With --data
    DIR, the folders whose owner process is dead are removed; those of live
    owners, and of owners on another host or in another pid namespace, are kept.
    """
    _check_one_target(redis_url, data_dirs)
    if redis_url is not None:
        redis_gc(redis_url, shared_idle_s=shared_idle, unknown=unknown)
        return
    if data_dirs:
        if shared_idle is not None:
            raise click.UsageError("--shared-idle needs --redis URL")
        data_gc(data_dirs, unknown=unknown)
        return
    if shared_idle is not None or unknown:
        raise click.UsageError("--shared-idle and --unknown need --redis URL (or --data DIR)")
    removed = reclaim_stale_segments(shm_dir)
    for info in removed:
        click.echo(f"removed {info.name} ({format_bytes(info.size_bytes)}, pid {_owner(info)})")
    freed = sum(i.size_bytes for i in removed)
    click.echo(f"freed {freed} bytes ({format_bytes(freed)}) in {len(removed)} segments")


@cache.command("rm")
@click.argument("name")
@click.option("--force", is_flag=True, help="Remove it even if its owner is alive or unknown.")
@_DIR_OPTION
@_REDIS_OPTION
def rm(name: str, force: bool, shm_dir: str, redis_url: str | None) -> None:
    """Remove one hotset segment or Redis namespace, refusing a live one unless --force.

    Removing a segment only unlinks the name: processes mapping it keep their
    copy until they exit, and a live owner's workers can no longer attach to it.
    Removing a namespace with live jobs makes their hits rebuild reads.
    """
    if redis_url is not None:
        redis_rm(redis_url, name, force=force)
        return
    info = remove_segment(name, force=force, shm_dir=shm_dir)
    click.echo(f"removed {info.name} ({info.size_bytes} bytes, owner {info.state})")
