"""Command-line lists: bad items are errors that name the option, never silently dropped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hotset.bench.workloads import parse_floats, parse_ints, parse_list
from hotset.errors import HotsetError


def test_lists_parse() -> None:
    assert parse_list(" a, b ", option="--x") == ["a", "b"]
    assert parse_floats("0.1,0.2", option="--fracs") == [0.1, 0.2]
    assert parse_ints("0, 1,2", option="--seeds") == [0, 1, 2]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: parse_list("a,,b", option="--systems"), "--systems: expected a comma"),
        (lambda: parse_floats("0.5,fast", option="--latency-ms"), "--latency-ms: expected numbers"),
        (lambda: parse_floats("", option="--fracs"), "--fracs: expected a comma"),
        (lambda: parse_ints("1,2.5", option="--seeds"), "--seeds: expected integers"),
    ],
)
def test_bad_items_name_the_option(call: Callable[[], object], message: str) -> None:
    with pytest.raises(HotsetError, match=message):
        call()


def test_a_workload_is_packed_only_for_systems_that_read_chunks(tmp_path: Path) -> None:
    from hotset.bench.workloads import needs_chunks, workload_dir
    from hotset.data.chunks import load_layout

    assert needs_chunks(["pytorch", "brand"]) and not needs_chunks(["lru", "shade[unbiased=true]"])
    plain = workload_dir("digits", data_dir=tmp_path)
    assert load_layout(plain) is None
    packed = workload_dir("digits", data_dir=tmp_path, packed=True)
    layout = load_layout(packed)
    assert packed == plain and layout is not None and layout.chunk_size == 64
    assert workload_dir("digits", data_dir=tmp_path, packed=True) == packed  # reused as is


def test_imagenet_like_workload_is_generated_once_with_its_stated_sizes(tmp_path: Path) -> None:
    from hotset.bench.workloads import IMAGENET_LIKE_N, WORKLOADS, workload_dir
    from hotset.data.manifest import Manifest

    assert "imagenet-like" in WORKLOADS
    path = workload_dir("imagenet-like", data_dir=tmp_path, synth_n=300)
    assert path == tmp_path / f"imagenet-like-{IMAGENET_LIKE_N}"
    manifest = Manifest.load(path)
    sizes = np.asarray(manifest.sizes)
    assert len(manifest) == IMAGENET_LIKE_N == 2000  # its own size, whatever synth_n says
    assert sizes.mean() == pytest.approx(110_000, rel=0.05)
    assert manifest.meta["sizes"]["model"] == "imagenet"
    stamp = (path / "manifest.csv").stat().st_mtime_ns
    assert workload_dir("imagenet-like", data_dir=tmp_path) == path
    assert (path / "manifest.csv").stat().st_mtime_ns == stamp  # reused, not rewritten


def test_a_test_set_is_a_clean_other_draw_made_once(tmp_path: Path) -> None:
    """``test_set_dir``: draw 1 of the workload's generator with no flipped labels (no
    sample shared with the workload), reused once written; a workload without a
    generator, or a bad size, is refused by name."""
    from hotset.bench.workloads import TEST_DRAW, test_set_dir, workload_dir
    from hotset.data import Manifest, SynthTruth

    test = test_set_dir("synth-noisy", data_dir=tmp_path, n=300)
    train = workload_dir("synth-noisy", data_dir=tmp_path, synth_n=300)
    manifest = Manifest.load(test)
    assert len(manifest) == 300 and manifest.meta["synth"]["draw"] == TEST_DRAW
    assert manifest.meta["synth"]["noise"] == 0.0 and manifest.meta["synth"]["easy"] == 0.5
    assert not SynthTruth.load(test).flipped.any()
    assert not set(manifest.hashes) & set(Manifest.load(train).hashes)
    stamp = (test / "manifest.csv").stat().st_mtime_ns
    assert test_set_dir("synth-noisy", data_dir=tmp_path, n=300) == test
    assert (test / "manifest.csv").stat().st_mtime_ns == stamp  # reused, not rewritten
    with pytest.raises(HotsetError, match="workload 'digits' has no test set"):
        test_set_dir("digits", data_dir=tmp_path, n=300)
    with pytest.raises(HotsetError, match="--test-n: must be a positive integer, got 0"):
        test_set_dir("synth", data_dir=tmp_path, n=0)
