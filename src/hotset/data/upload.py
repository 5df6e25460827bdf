"""Copy a local data set into an object store: ``hotset data upload DIR s3://bucket/prefix``.

Why: a data set made or imported on disk (``hotset data synth``, ``import``,
``pack``) is what a job elsewhere reads from S3. The copy holds every sample
under the same key, the chunk files and ``chunks.json`` when the set is
packed, and its ``manifest.csv`` and ``dataset.json`` (``root`` made ``"."``:
the keys are beside them now), so ``open_dataset(URL)`` opens it as it was.
The manifest is written last: an interrupted upload has none, so nothing opens
half a copy (uploading again overwrites what came across, with ``force``).
Each file is read back from disk, checked against the manifest (sizes and xxh3)
before it is sent, and sent as one PUT, ``workers`` at a time.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

from hotset.data.chunks import CHUNKS_JSON, load_layout
from hotset.data.manifest import DATASET_JSON, MANIFEST_CSV, Manifest, content_hash
from hotset.data.opener import is_url, open_dataset
from hotset.errors import HotsetError, IntegrityError

__all__ = ["upload_dataset"]


def upload_dataset(
    source: str | os.PathLike[str],
    url: str,
    *,
    force: bool = False,
    progress: bool = False,
    workers: int = 8,
) -> int:
    """Copy the local data set ``source`` to ``url``; the bytes sent (see the module)."""
    from tqdm import tqdm

    from hotset.storage import open_store

    if is_url(os.fspath(source)):
        raise HotsetError(f"upload: {os.fspath(source)!r} is a URL; give a local data set")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise HotsetError(f"workers: must be an integer >= 1, got {workers!r}")
    manifest, src = open_dataset(source)
    layout = load_layout(source, manifest=manifest)
    dest = open_store(url)
    if not force and dest.exists(MANIFEST_CSV):
        raise HotsetError(f"{url.rstrip('/')}/{MANIFEST_CSV} already exists (--force replaces it)")
    expected = dict(zip(manifest.keys, manifest.hashes, strict=True))
    if layout is not None:
        expected.update(zip(layout.chunk_keys, layout.chunk_hashes, strict=True))

    def copy(key: str) -> int:
        data = src.read(key)
        if content_hash(data) != expected[key]:
            raise IntegrityError(f"{key!r} in {src!r} does not hash to its manifest's xxh3")
        dest.write(key, data)
        return len(data)

    with ThreadPoolExecutor(workers, thread_name_prefix="hotset-upload") as pool:
        sent = sum(
            tqdm(
                pool.map(copy, list(expected)),
                total=len(expected),
                desc="upload",
                unit="file",
                file=sys.stderr,
                disable=not progress,
            )
        )
    if layout is not None:
        dest.write(CHUNKS_JSON, layout.to_json().encode())
    meta = {**manifest.meta, "root": "."}
    copied = Manifest(manifest.ids, manifest.keys, manifest.sizes, manifest.labels,
                      manifest.hashes, meta)  # fmt: skip
    dest.write(DATASET_JSON, copied.meta_json().encode())
    dest.write(MANIFEST_CSV, copied.to_csv().encode())
    return sent
