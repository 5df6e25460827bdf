"""Data sets for the content-addressing tests (no pytest here)."""

from __future__ import annotations

from pathlib import Path

from hotset.data import Manifest


def renamed_copy(src: Path, dst: Path) -> None:
    """``src``'s bytes in reverse id order under other file names: same content, new ids."""
    m = Manifest.load(src)
    order = list(reversed(range(len(m))))
    keys = [f"copy/item-{j:04d}.bin" for j in range(len(m))]
    for j, old in enumerate(order):
        (dst / keys[j]).parent.mkdir(parents=True, exist_ok=True)
        (dst / keys[j]).write_bytes((src / m.keys[old]).read_bytes())
    Manifest(
        ids=range(len(m)),
        keys=keys,
        sizes=[int(m.sizes[o]) for o in order],
        labels=[int(m.labels[o]) for o in order],
        hashes=[m.hashes[o] for o in order],
        meta={k: v for k, v in m.meta.items() if k != "root"},
    ).save(dst)
