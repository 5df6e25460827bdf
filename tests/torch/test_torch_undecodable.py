"""With ``verify=False`` on a shared namespace, a cache entry that does not decode is read
again from storage, for every kind of data set; bytes from storage that do not decode
still stop training, named.

Before, only the item codec's path (a user's own Dataset) re-read an undecodable
entry: a manifest data set, or a user's raw bytes (``from_dataset(read=...)``, with
``sizes=`` always ``verify=False``), stopped at the first entry another client had
overwritten (23 of 23 runs). Here a real redis-server holds the loader's entries,
another client overwrites every one of them with bytes of the same length after a
warm epoch, and two DataLoader workers must deliver the next epoch exactly as the
files decode, counting each bad entry as an integrity error and a rebuild read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
import torch
from user_support import Folder

import hotset
from hotset.data.decode import decode
from hotset.errors import HotsetError


def _folder(dataset_dir: Path) -> Folder:
    manifest = hotset.open_dataset(dataset_dir, decode="bytes").manifest
    return Folder(dataset_dir, manifest.keys, [int(v) for v in manifest.labels])


def _data(kind: str, dataset_dir: Path) -> Any:
    folder = _folder(dataset_dir)
    if kind == "manifest" or kind == "packed":
        return hotset.open_dataset(dataset_dir, decode="image")
    if kind == "raw-bytes":
        return hotset.from_dataset(folder, read=folder.read, decode="image", labels=folder.labels)
    if kind == "raw-bytes-sizes":  # nothing measured: verify=False is required
        sizes = [len(folder.read(i)) for i in range(len(folder))]
        return hotset.from_dataset(
            folder, read=folder.read, decode="image", sizes=sizes, labels=folder.labels
        )
    assert kind == "items"
    return folder  # the item codec's path


@pytest.fixture(scope="module")
def packed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from packed_support import packed_synth

    return packed_synth(tmp_path_factory.mktemp("undecpk") / "ds", n=200, seed=3, chunk_size=8)


def _overwrite(loader: Any, url: str) -> int:
    """Another client of the server overwrites every cached entry of the loader's
    namespace (samples, and chunks cached whole) with zeros of its length."""
    client = redis.Redis.from_url(url)
    done = 0
    try:
        for key in list(client.scan_iter(match=f"hotset:{loader.namespace}:*")):
            name = key.decode()
            if name.endswith(":used-bytes") or name.count(":") != 3:
                continue  # the namespace's books, not an entry
            client.set(key, bytes(int(client.strlen(key))))
            done += 1
    finally:
        client.close()
    return done


def _truth(dataset_dir: Path) -> list[torch.Tensor]:
    folder = _folder(dataset_dir)
    return [torch.from_numpy(decode(folder.read(i), folder.keys[i])) for i in range(len(folder))]


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("kind", ["manifest", "raw-bytes", "raw-bytes-sizes", "items", "packed"])
def test_an_undecodable_entry_is_read_again_for_every_kind_of_data_set(
    request: pytest.FixtureRequest, redis_url: str, kind: str, workers: int
) -> None:
    """``packed``: Quiver on a packed set (chunks read whole, their members cached)."""
    root = request.getfixturevalue("packed_dir" if kind == "packed" else "dataset_dir")
    truth = _truth(root)
    with hotset.loader(
        _data(kind, root),
        system="quiver" if kind == "packed" else "lru",
        cache=redis_url,
        cache_bytes="100%",
        namespace=f"undecodable-{kind}-{workers}",
        batch_size=16,
        num_workers=workers,
        verify=False,
    ) as ld:
        ld.set_epoch(0)
        assert sum(len(ids) for _, _, ids, _ in ld) == len(truth)
        planted = _overwrite(ld, redis_url)
        assert planted > 0 if kind == "packed" else planted == len(truth)  # all was cached
        ld.set_epoch(1)
        seen = 0
        for x, _y, ids, _w in ld:
            assert torch.equal(x, torch.stack([truth[i] for i in ids.tolist()]))
            seen += len(ids)
        row = ld.report()[1]
    assert seen == len(truth)
    if kind == "packed":  # quiver serves some entries, loads others again with chunks
        assert 0 < row["integrity_errors"] <= planted
    else:
        assert row["integrity_errors"] == planted
    assert row["rebuild_reads"] >= row["integrity_errors"]


def test_stored_bytes_that_do_not_decode_still_stop_training_named(
    dataset_dir: Path, tmp_path: Path
) -> None:
    """Storage holds no better copy: a file that is not an image is an error naming it,
    cache or no cache (here no cache: every byte comes from storage)."""
    import shutil

    copy = tmp_path / "ds"
    shutil.copytree(dataset_dir, copy)
    data = hotset.open_dataset(copy, decode="bytes")
    victim = data.manifest.keys[7]
    (copy / victim).write_bytes(bytes(len((copy / victim).read_bytes())))
    data = hotset.open_dataset(copy, decode="image")
    with (
        hotset.loader(data, system="pytorch", batch_size=16, verify=False) as ld,
        pytest.raises(HotsetError, match=f"cannot decode '{victim}'"),
    ):
        for _ in ld:
            pass
