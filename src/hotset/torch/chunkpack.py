"""The chunk layout a loader's system reads: the data set's own, or the loader's pack of it.

Two things happen here, before the system is built, for a system that reads
chunks (``capabilities.reads_units``: Brand; or ``loads``: Quiver, which loads a
packed set a chunk per request and an unpacked one a sample per request):

* **packing an unpacked set.** A system that cannot run without chunks
  (``reads_units``) on a data set without a layout gets one: the loader packs
  the data set once into ``pack_dir`` and later loaders find it there
  (:mod:`hotset.data.packdir` says where, why there, and how one process packs
  while the others wait). Quiver runs on an unpacked set as it is, a sample per
  request, unless ``pack_dir=`` is given: then it is packed too, and read a
  chunk per request. A data set packed in place (``hotset data pack``) is used
  as it is: its layout, and so the system's decisions, are never replaced.
* **warning on label-homogeneous chunks.** A layout whose chunks hold one class
  each (:mod:`hotset.data.homogeneity`) is warned about, once per data set and
  process, with the ``hotset data pack`` command that re-packs it shuffled.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import replace

from hotset.data.homogeneity import homogeneity_warning
from hotset.data.packdir import pack_for
from hotset.errors import HotsetError
from hotset.torch.dataset import HotsetDataset
from hotset.torch.options import LoaderOptions

__all__ = ["with_chunks"]

#: (where the layout came from, its first chunk's hash) of the layouts already warned about
_warned: set[tuple[str, str]] = set()


def with_chunks(data: HotsetDataset, options: LoaderOptions, *, stacklevel: int) -> HotsetDataset:
    """``data`` with the chunk layout ``options.system`` reads (see the module docstring).

    ``stacklevel`` points the warning at the frame that made the loader.
    """
    from hotset.engine.capabilities import Capabilities
    from hotset.systems.registry import capabilities_of, parse_system

    system = options.system
    caps: Capabilities = capabilities_of(parse_system(system)[0])
    reads_chunks = caps.reads_units or caps.loads
    if options.pack_dir is not None and not reads_chunks:
        raise HotsetError(
            f"pack_dir={os.fspath(options.pack_dir)!r}: system {system!r} reads no chunks "
            "(only systems that read or load whole chunks, such as brand and quiver, use a "
            "pack); leave pack_dir out"
        )
    if data.layout is None and (caps.reads_units or options.pack_dir is not None):
        data = _packed(data, options, "reads whole chunks" if caps.reads_units else "loads chunks")
    if reads_chunks and data.layout is not None:
        _warn_if_homogeneous(data, stacklevel=stacklevel + 1)
    return data


def _packed(data: HotsetDataset, options: LoaderOptions, verb: str) -> HotsetDataset:
    """``data`` with the loader's pack of it as its layout (made now if there is none)."""
    from hotset.torch.user import is_unhashed

    source = data.source or "the data set"
    if is_unhashed(data.manifest):
        raise HotsetError(
            f"system {options.system!r} {verb} and {source!r} has no chunk layout, but the "
            "loader cannot pack it: from_dataset(..., sizes=...) hashed nothing, and a pack "
            "is checked and found again by its samples' hashes; leave sizes= out, or use a "
            "system that reads single samples"
        )
    layout = pack_for(
        data.manifest,
        data.store,
        pack_dir=options.pack_dir,
        source=source,
        why=f"system {options.system!r} {verb}",
    )
    return replace(data, layout=layout)


def _warn_if_homogeneous(data: HotsetDataset, *, stacklevel: int) -> None:
    """Warn, once per data set and process, where its chunks are label-homogeneous."""
    layout = data.layout
    assert layout is not None
    key = (layout.dataset or data.source, layout.chunk_hashes[0])
    if key in _warned:
        return
    text = homogeneity_warning(layout, data.manifest.labels)
    if text is None:
        return
    _warned.add(key)
    warnings.warn(f"hotset: {text}", RuntimeWarning, stacklevel=stacklevel + 1)
