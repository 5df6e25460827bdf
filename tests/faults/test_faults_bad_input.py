"""Bad input is refused with one clear HotsetError naming the culprit (issue "Survive faults").

Each test is one case a tester reported: binary garbage as a manifest, a
manifest cut at a row boundary, impossible cache budgets, options of the wrong
type, and ``len(loader)`` before an epoch with uneven shards. The CLI turns a
HotsetError into one line and exit code 2, so these must never be other
exceptions.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hotset
from hotset.cachestore.registry import parse_cache_spec
from hotset.cli import main
from hotset.data import SynthConfig, make_synth
from hotset.data.manifest import DATASET_JSON, MANIFEST_CSV, Manifest
from hotset.errors import HotsetError
from hotset.units import parse_budget, parse_bytes


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("faults") / "ds"
    make_synth(path, SynthConfig(n=200, image_size=8, classes=4, seed=3), workers=1)
    return path


@pytest.fixture(scope="module")
def data(dataset_dir: Path) -> hotset.torch.HotsetDataset:
    return hotset.open_dataset(dataset_dir, decode="bytes")


def _copy(dataset_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ds"
    shutil.copytree(dataset_dir, copy)
    return copy


# -- manifests ------------------------------------------------------------------------


def test_binary_garbage_manifest(
    dataset_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = _copy(dataset_dir, tmp_path)
    (copy / MANIFEST_CSV).write_bytes(bytes(range(256)) * 4)
    with pytest.raises(HotsetError, match="not a manifest csv: byte 0x80 at offset 128"):
        Manifest.load(copy)
    with pytest.raises(SystemExit) as exc:
        main(["data", "verify", str(copy)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("hotset: error: ") and "Traceback" not in err


def test_nul_bytes_and_garbage_json(dataset_dir: Path, tmp_path: Path) -> None:
    copy = _copy(dataset_dir, tmp_path)
    text = (copy / MANIFEST_CSV).read_text()
    (copy / MANIFEST_CSV).write_text(text.replace("train/", "tr\0ain/", 1))
    with pytest.raises(HotsetError, match=r"line 2: field key: bad key .*control characters"):
        Manifest.load(copy)
    (copy / MANIFEST_CSV).write_text(text)
    (copy / DATASET_JSON).write_bytes(b"\xff\xfe{}")
    with pytest.raises(HotsetError, match="not a JSON metadata file"):
        Manifest.load(copy)
    (copy / DATASET_JSON).write_text("[" * 100_000)
    with pytest.raises(HotsetError, match="not valid JSON"):
        Manifest.load(copy)


def test_id_too_large_for_int64(dataset_dir: Path, tmp_path: Path) -> None:
    copy = _copy(dataset_dir, tmp_path)
    lines = (copy / MANIFEST_CSV).read_text().splitlines()
    fields = lines[1].split(",")
    fields[2] = str(2**70)
    lines[1] = ",".join(fields)
    (copy / MANIFEST_CSV).write_text("\n".join(lines) + "\n")
    with pytest.raises(HotsetError, match=r"line 2: field size: .* does not fit in 64 bits"):
        Manifest.load(copy)


def test_manifest_cut_at_a_row_boundary(dataset_dir: Path, tmp_path: Path) -> None:
    copy = _copy(dataset_dir, tmp_path)
    assert json.loads((copy / DATASET_JSON).read_text())["num_samples"] == 200
    lines = (copy / MANIFEST_CSV).read_text().splitlines(keepends=True)
    (copy / MANIFEST_CSV).write_text("".join(lines[:151]))  # header + 150 rows
    with pytest.raises(
        HotsetError, match=r"has 150 rows but dataset.json says num_samples is 200: the manifest"
    ):
        Manifest.load(copy)


def test_old_dataset_json_without_count_uses_synth_n(dataset_dir: Path, tmp_path: Path) -> None:
    copy = _copy(dataset_dir, tmp_path)
    meta = json.loads((copy / DATASET_JSON).read_text())
    del meta["num_samples"]
    (copy / DATASET_JSON).write_text(json.dumps(meta))
    assert len(Manifest.load(copy)) == 200
    lines = (copy / MANIFEST_CSV).read_text().splitlines(keepends=True)
    (copy / MANIFEST_CSV).write_text("".join(lines[:151]))
    with pytest.raises(HotsetError, match=r"has 150 rows but dataset.json says synth.n is 200"):
        Manifest.load(copy)


def test_saved_count_round_trips(dataset_dir: Path, tmp_path: Path) -> None:
    manifest = Manifest.load(dataset_dir)
    assert "num_samples" not in manifest.meta  # derived from the rows, not kept
    manifest.save(tmp_path / "again")
    assert Manifest.load(tmp_path / "again") == manifest


# -- budgets --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (math.inf, r"cache=inf: a float budget is a fraction .* must be in \(0, 1\]"),
        (2.0, r"cache=2.0: a float budget is a fraction"),
        (0.0, r"cache=0.0: a float budget"),
        (-0.5, r"cache=-0.5: a float budget"),
        (math.nan, r"cache=nan: a float budget"),
        ("inf", "cannot parse byte count 'inf'"),
        ("150%", r"cache='150%': a percentage must be in \(0%, 100%\]"),
        ("x%", "cannot parse percentage 'x%'"),
        (10**30, "is too large"),
        ([1], "expected a byte count"),
    ],
)
def test_bad_budgets(value: Any, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        parse_budget(value, total=1000, name="cache")


def test_budget_forms() -> None:
    assert parse_budget("20%", total=1000) == 200
    assert parse_budget(" 12.5 % ", total=1000) == 125
    assert parse_budget(0.2, total=1000) == 200
    assert parse_budget(1.0, total=1000) == 1000
    assert parse_budget(2, total=1000) == 2  # ints stay byte counts
    assert parse_budget("2kb", total=1000) == 2000
    assert parse_bytes(2.0) == 2
    with pytest.raises(HotsetError, match="must be a finite byte count"):
        parse_bytes(math.inf)


def test_loader_budgets(data: hotset.torch.HotsetDataset) -> None:
    total = int(data.manifest.sizes.sum())
    with hotset.loader(data, system="lru", cache="50%", batch_size=16) as loader:
        assert loader.capacity_bytes == total // 2
    with pytest.raises(HotsetError, match="cache=inf"):
        hotset.loader(data, system="lru", cache=math.inf)
    with pytest.raises(HotsetError, match=r"cache=2.0"):
        hotset.loader(data, system="lru", cache=2.0)
    with pytest.raises(HotsetError, match=r"cache_bytes=3.5"):
        hotset.loader(data, system="lru", cache="memory", cache_bytes=3.5)


# -- options --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "match"),
    [
        ("timeout", -1, r"timeout must be a finite number of seconds >= 0 .* got -1"),
        ("timeout", math.inf, "timeout must be a finite number.* got inf"),
        ("timeout", "5", "timeout must be a finite number.* got '5'"),
        ("verify", "no", "verify must be True or False, got 'no'"),
        ("verify", 1, "verify must be True or False, got 1"),
        ("pin_memory", "yes", "pin_memory must be True or False"),
        ("persistent_workers", "yes", "persistent_workers must be True or False"),
        ("drop_last", 0, "drop_last must be True or False"),
        ("progress", "off", "progress must be True or False"),
        ("io_threads", 2.0, "io_threads must be an integer >= 1, got 2.0"),
        ("num_workers", "4", "num_workers must be an integer >= 0"),
        ("batch_size", 16.0, "batch_size must be an integer >= 1"),
        ("namespace", 5, "namespace must be a sharing key"),
        ("check_store", None, "check_store must be a string"),
        ("system_options", [1], "system_options must be a mapping"),
        ("worker_init_fn", 3, "worker_init_fn must be callable"),
        ("multiprocessing_context", "thread", "multiprocessing_context must be one of"),
        ("system", 7, "system must be a system name"),
    ],
)
def test_bad_option_types(
    data: hotset.torch.HotsetDataset, option: str, value: Any, match: str
) -> None:
    options: dict[str, Any] = {"system": "lru", "cache": "1mb", option: value}
    with pytest.raises(HotsetError, match=match):
        hotset.loader(data, **options)


# -- cache specs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("redis://[::1", "not a valid URL"),
        ("redis://localhost:99999/0", "not a valid URL"),
        ("redis://localhost:6379/abc", "database 'abc' is not a number"),
        ("REDIS://localhost:6379/0", "lowercase"),
        ("redis:///0", "no host"),
        ("redis://localhost:6379/0?socket_timeout=soon", "Invalid value for 'socket_timeout'"),
        ("redis+cluster://h:1/2", "a cluster has only database 0"),
        ("redis+cluster://h:x", "expected host:port"),
        ("redis+cluster://h:\u00b2", "expected host:port"),
        ("memcached://h", "unknown cache"),
        (["h:1", 2], "non-empty list of 'host:port' strings"),
        (42, "unknown cache 42"),
    ],
)
def test_bad_cache_specs(spec: Any, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        parse_cache_spec(spec)


def test_good_cache_specs() -> None:
    assert parse_cache_spec(" Memory ") == "memory"
    assert parse_cache_spec("redis://127.0.0.1:6379/0") == "redis"
    assert parse_cache_spec("redis+cluster://a:1,b:2") == "redis-cluster"
    assert parse_cache_spec(["a:1", "b:2"]) == "redis-cluster"


# -- len(loader) ----------------------------------------------------------------------


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("system", ["lru", "shade"])
def test_len_before_the_epoch_matches_the_epoch(
    data: hotset.torch.HotsetDataset, drop_last: bool, system: str
) -> None:
    # 200 ids over 3 ranks: each rank gets ceil(200 / 3) = 67 (padded by wrapping)
    for rank in range(3):
        with hotset.loader(
            data,
            system=system,
            cache="1mb",
            batch_size=16,
            rank=rank,
            world_size=3,
            drop_last=drop_last,
        ) as loader:
            before = len(loader)
            assert before == (4 if drop_last else 5)
            batches = sum(1 for _ in loader)
            assert batches == before == len(loader)
            assert len(loader) == before  # finished epoch: the next one has as many


def test_a_binary_manifest_behind_a_url_is_not_a_manifest() -> None:
    import fsspec

    from hotset.data import open_dataset as open_manifest

    fsspec.filesystem("memory").pipe("/garbage-ds/manifest.csv", b"\x80\x81\xfe\xff not text")
    with pytest.raises(HotsetError, match=r"memory://garbage-ds/manifest.csv: not a manifest csv"):
        open_manifest("memory://garbage-ds")


@pytest.mark.parametrize("node", ["h:²", "h:٣٠٠٠", "h:0", "h:65536", ":7000", "h"])
def test_a_cluster_node_needs_an_ascii_port_in_range(node: str) -> None:
    from hotset.cachestore.redis_store import _host_port

    with pytest.raises(HotsetError, match=r"expected host:port"):
        _host_port(node, spec=f"redis+cluster://{node}")


# -- issue #25 item 7: values that were silently misread, or a traceback -------------


@pytest.mark.parametrize(
    ("indices", "match"),
    [
        ([1.5], r"got 1\.5 \(float\) in \[1\.5\]"),
        ([3, 2.0], r"got 2\.0 \(float\)"),
        ([True, 4], r"got True \(bool\)"),
        (np.array([0.5, 1.0]), r"got 0\.5 \(float\)"),
        (["7"], r"got '7' \(str\)"),
        ([[1], [2, 3]], r"got \[\[1\], \[2, 3\]\]"),
        ([[1], [2]], r"got \[1\] \(list\)"),
    ],
)
def test_subset_names_a_non_integer_index(
    data: hotset.torch.HotsetDataset, indices: Any, match: str
) -> None:
    with pytest.raises(HotsetError, match=rf"^subset: indices must be integer ids.*{match}"):
        data.subset(indices)
    assert len(data.subset(np.array([5, 1], dtype=np.uint8))) == 2  # integers of any kind


@pytest.mark.parametrize("location", [123, None, b"/tmp/ds", ["ds"], 1.5])
def test_open_dataset_names_a_location_that_is_not_a_path(location: Any) -> None:
    with pytest.raises(HotsetError, match=r"^open_dataset: location must be .* \(a str or"):
        hotset.open_dataset(location)


def _link_out(dataset_dir: Path, tmp_path: Path, sid: int) -> tuple[Path, str]:
    """A copy whose sample ``sid`` is a link to a file outside it, with the very same bytes.

    The manifest's size and xxh3 match, so only the link itself can give it away.
    """
    copy = _copy(dataset_dir, tmp_path)
    key = Manifest.load(copy).keys[sid]
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes((copy / key).read_bytes())
    (copy / key).unlink()
    (copy / key).symlink_to(outside)
    return copy, key


@pytest.mark.parametrize("workers", [0, 2])
def test_a_sample_linked_outside_the_data_root_is_refused(
    dataset_dir: Path, tmp_path: Path, workers: int
) -> None:
    copy, key = _link_out(dataset_dir, tmp_path, 42)
    with (
        hotset.loader(
            hotset.open_dataset(copy, decode="bytes"),
            system="lru",
            cache="50%",
            batch_size=50,
            num_workers=workers,
            check_store="off",
        ) as ld,
        pytest.raises(HotsetError, match=rf"key '{key}' leads outside the store root") as caught,
    ):
        ld.set_epoch(0)
        for _ in ld:
            pass
    assert "Traceback" not in str(caught.value)
    with pytest.raises(HotsetError, match=rf"key '{key}' leads outside"):
        hotset.open_dataset(copy)[42]
