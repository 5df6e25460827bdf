"""``hotset cache``: see and reclaim the shared-memory segments hotset caches leave.

Why a command: a job killed as a whole process group (Slurm, docker, ``timeout``)
leaves its cache segment in ``/dev/shm``. The next cache created on the machine
reclaims it, but an operator wants to see and free that memory now, without
starting a job. The rules (owner identity, what counts as dead, what is never
touched) are :mod:`hotset.cachestore.shm_gc`'s.
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
from hotset.units import format_bytes

_DIR_OPTION = click.option(
    "--dir",
    "shm_dir",
    default=SHM_DIR,
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the segments live (a tmpfs).",
)


@click.group("cache")
def cache() -> None:
    """Inspect and reclaim hotset shared-memory caches in /dev/shm.

    Only segments named hotset_* are listed and collected. Redis namespaces are
    out of scope for now: these commands do not look at Redis.
    """


def _owner(info: SegmentInfo) -> str:
    return "-" if info.owner_pid is None else str(info.owner_pid)


@cache.command("ls")
@_DIR_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
def ls(shm_dir: str, as_json: bool) -> None:
    """List hotset segments: name, size, owner pid and whether the owner is alive."""
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
def gc(shm_dir: str) -> None:
    """Remove the segments whose owner process is dead; print the bytes freed.

    Segments of live owners, of owners in another pid namespace and of unknown
    owners are kept (use `hotset cache rm --force NAME` for those).
    """
    removed = reclaim_stale_segments(shm_dir)
    for info in removed:
        click.echo(f"removed {info.name} ({format_bytes(info.size_bytes)}, pid {_owner(info)})")
    freed = sum(i.size_bytes for i in removed)
    click.echo(f"freed {freed} bytes ({format_bytes(freed)}) in {len(removed)} segments")


@cache.command("rm")
@click.argument("name")
@click.option("--force", is_flag=True, help="Remove it even if its owner is alive or unknown.")
@_DIR_OPTION
def rm(name: str, force: bool, shm_dir: str) -> None:
    """Remove one hotset segment, refusing a live owner's unless --force.

    Removing only unlinks the name: processes mapping it keep their copy until
    they exit, and a live owner's workers can no longer attach to it.
    """
    info = remove_segment(name, force=force, shm_dir=shm_dir)
    click.echo(f"removed {info.name} ({info.size_bytes} bytes, owner {info.state})")
