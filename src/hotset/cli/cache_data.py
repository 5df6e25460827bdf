"""``hotset cache ls|gc --data DIR``: the folders killed jobs leave in a data directory.

The rules (what a leftover is, whose it is, when it may go) are
:mod:`hotset.data.leftovers`'s; this module only prints them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import click

from hotset.data.leftovers import Leftover, reclaim, scan
from hotset.data.manifest import DATASET_JSON, parse_meta
from hotset.errors import HotsetError
from hotset.units import format_bytes

__all__ = ["data_gc", "data_ls"]


def _places(data_dirs: tuple[str, ...]) -> Iterator[Path]:
    """Each directory given, and the root its ``dataset.json`` names when that is another
    (a data set whose files live elsewhere packs its chunks there)."""
    seen: set[Path] = set()
    for d in data_dirs:
        places = [Path(d)]
        with contextlib.suppress(OSError, HotsetError):  # no (readable) metadata: d alone
            root = parse_meta((Path(d) / DATASET_JSON).read_bytes()).get("root")
            if isinstance(root, str):
                places.append(Path(d) / root)
        for place in places:
            key = place.resolve()
            if key not in seen and place.is_dir():
                seen.add(key)
                yield place


def data_ls(data_dirs: tuple[str, ...], *, as_json: bool) -> None:
    """``ls --data``: one row per leftover folder, its size and its owner's state."""
    items = [item for d in _places(data_dirs) for item in scan(d)]
    if as_json:
        click.echo(json.dumps([asdict(i) for i in items], indent=2))
        return
    if not items:
        click.echo(f"no hotset leftovers in {', '.join(data_dirs)}")
        return
    width = max(len(i.path) for i in items)
    click.echo(f"{'FOLDER':<{width}}  {'KIND':<8}  {'SIZE':>10}  {'OWNER':>8}  STATE")
    for i in items:
        click.echo(
            f"{i.path:<{width}}  {i.kind:<8}  {format_bytes(i.size_bytes):>10}  "
            f"{_leftover_owner(i):>8}  {i.state} ({i.reason})"
        )
    total = sum(i.size_bytes for i in items)
    dead = sum(i.size_bytes for i in items if i.state == "dead")
    click.echo(f"{len(items)} folders, {format_bytes(total)}; {format_bytes(dead)} reclaimable")


def _leftover_owner(item: Leftover) -> str:
    return "-" if item.owner_pid is None else str(item.owner_pid)


def data_gc(data_dirs: tuple[str, ...], *, unknown: bool) -> None:
    """``gc --data``: remove the leftover folders of dead owners (and, with
    ``unknown``, those that record none)."""
    removed = [item for d in _places(data_dirs) for item in reclaim(d, unknown=unknown)]
    for item in removed:
        click.echo(
            f"removed {item.path} ({format_bytes(item.size_bytes)}, "
            f"pid {_leftover_owner(item)}, {item.reason})"
        )
    freed = sum(i.size_bytes for i in removed)
    click.echo(f"freed {freed} bytes ({format_bytes(freed)}) in {len(removed)} folders")
