"""Synthetic data: deterministic bytes, the promised label noise and difficulty spread, learnable."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import hotset.data.synth as synth_mod
from hotset.data import decode, decode_many, open_dataset
from hotset.data.manifest import Manifest
from hotset.data.synth import TRUTH_FILE, SynthConfig, SynthTruth, ground_truth, make_synth
from hotset.errors import HotsetError


def _make(out: Path, **kw: object) -> Manifest:
    args: dict[str, object] = {"n": 120, "image_size": 8, "seed": 1}
    args.update(kw)
    return make_synth(out, SynthConfig(**args))  # type: ignore[arg-type]


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    a = _make(tmp_path / "a", n=1100)  # spans two pixel chunks
    b = _make(tmp_path / "b", n=1100)
    c = _make(tmp_path / "c", n=1100, seed=2)
    assert a.hashes == b.hashes
    assert (tmp_path / "a" / "manifest.csv").read_bytes() == (
        tmp_path / "b" / "manifest.csv"
    ).read_bytes()
    assert (tmp_path / "a" / a.keys[1050]).read_bytes() == (
        tmp_path / "b" / b.keys[1050]
    ).read_bytes()
    assert sum(x != y for x, y in zip(a.hashes, c.hashes, strict=True)) > 1000
    assert not np.array_equal(a.labels, c.labels)
    ta, tb = SynthTruth.load(tmp_path / "a"), SynthTruth.load(tmp_path / "b" / TRUTH_FILE)
    np.testing.assert_array_equal(ta.difficulty, tb.difficulty)
    np.testing.assert_array_equal(ta.label, a.labels)


def test_thread_count_does_not_change_bytes(tmp_path: Path) -> None:
    cfg = SynthConfig(n=1500, image_size=8, seed=4)
    one = make_synth(tmp_path / "one", cfg, workers=1)
    three = make_synth(tmp_path / "three", cfg, workers=3)
    assert one.hashes == three.hashes


@pytest.mark.parametrize("noise", [0.0, 0.1, 0.37])
def test_flip_fraction_matches_noise(noise: float) -> None:
    t = ground_truth(SynthConfig(n=4000, classes=7, noise=noise, seed=3))
    assert t.flipped.sum() == round(noise * 4000)
    # a flip always changes the label; no other label differs from the truth
    np.testing.assert_array_equal(t.label != t.true_label, t.flipped)
    assert t.label.min() >= 0 and t.label.max() < 7
    assert (t.confuser != t.true_label).all()
    # classes stay balanced in the ground truth
    counts = np.bincount(t.true_label, minlength=7)
    assert counts.max() - counts.min() <= 1


def test_difficulty_spreads_from_easy_to_hard() -> None:
    d = ground_truth(SynthConfig(n=5000, seed=5)).difficulty
    assert d.min() > 0.0 and d.max() < 1.0
    assert (d < 0.15).mean() > 0.05  # some easy
    assert ((d > 0.3) & (d < 0.6)).mean() > 0.3  # many medium
    assert (d > 0.75).mean() > 0.03  # a hard tail
    assert d.std() > 0.15


@pytest.mark.parametrize("fmt", ["png", "jpeg", "npy"])
@pytest.mark.parametrize("channels", [1, 3])
def test_formats_decode_to_chw(tmp_path: Path, fmt: str, channels: int) -> None:
    m = _make(tmp_path / "d", n=20, image_size=12, format=fmt, channels=channels)
    manifest, store = open_dataset(tmp_path / "d")
    assert manifest == m
    assert all(k.endswith({"png": ".png", "jpeg": ".jpg", "npy": ".npy"}[fmt]) for k in m.keys)
    batch = decode_many(store.read_many(m.keys), m.keys)
    assert batch.shape == (20, channels, 12, 12)
    assert batch.min() >= 0.0 and batch.max() <= 1.0 and batch.std() > 0.02
    assert m.meta["format"] == fmt and m.meta["channels"] == channels
    assert m.meta["image_size"] == 12 and m.meta["num_classes"] == 10
    assert m.sizes.tolist() == [len(store.read(k)) for k in m.keys]


def test_learnable_but_not_trivial(tmp_path: Path) -> None:
    """Nearest class mean on raw pixels: far above chance, below 100%, worse on hard samples."""
    m = _make(tmp_path / "d", n=2000, image_size=16, seed=11, noise=0.1)
    _, store = open_dataset(tmp_path / "d")
    x = decode_many(store.read_many(m.keys), m.keys).reshape(len(m), -1)
    truth = SynthTruth.load(tmp_path / "d")
    train, test = slice(0, 1500), slice(1500, 2000)
    y = m.labels
    means = np.stack([x[train][y[train] == k].mean(0) for k in range(10)])
    dist = ((x[test, None, :] - means[None]) ** 2).sum(-1)
    pred = dist.argmin(1)
    acc_true = (pred == truth.true_label[test]).mean()
    acc_label = (pred == y[test]).mean()
    assert acc_true > 0.5  # chance is 0.1
    assert acc_label < 0.97  # flipped labels cap it
    d = truth.difficulty[test]
    easy, hard = d < np.quantile(d, 0.3), d > np.quantile(d, 0.7)
    correct = pred == truth.true_label[test]
    assert correct[easy].mean() > correct[hard].mean() + 0.2


def test_layout_has_at_most_1000_files_per_folder(tmp_path: Path) -> None:
    m = _make(tmp_path / "d", n=2100, image_size=4)
    folders = {k.rsplit("/", 1)[0] for k in m.keys}
    assert folders == {"train/00", "train/01", "train/02"}
    assert max(len(os.listdir(tmp_path / "d" / f)) for f in folders) == 1000
    assert m.keys[1234] == "train/01/001234.png"


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"n": 0}, "--n"),
        ({"image_size": 2}, "--image-size"),
        ({"classes": 1}, "--classes"),
        ({"noise": 1.0}, "--noise"),
        ({"noise": -0.1}, "--noise"),
        ({"seed": -1}, "--seed"),
        ({"format": "gif"}, "format 'gif'"),
        ({"channels": 2}, "--channels"),
        ({"draw": -1}, "--draw"),
        ({"draw": True}, "--draw"),
    ],
)
def test_bad_config_names_the_option(kw: dict[str, object], needle: str) -> None:
    with pytest.raises(HotsetError, match=needle):
        SynthConfig(**kw)  # type: ignore[arg-type]


def test_refuses_non_empty_out_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "d"
    out.mkdir()
    (out / "precious.txt").write_text("keep")
    with pytest.raises(HotsetError, match="not empty"):
        _make(out)
    assert (out / "precious.txt").read_text() == "keep"
    m = make_synth(out, SynthConfig(n=10, image_size=4), force=True)
    assert not (out / "precious.txt").exists()
    assert Manifest.load(out) == m
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no temp or old dir left


def test_empty_existing_out_is_fine(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    assert len(_make(tmp_path / "d", n=5)) == 5


def test_failure_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real = synth_mod.encode_image

    def flaky(pixels: np.ndarray, fmt: str) -> bytes:
        calls["n"] += 1
        if calls["n"] == 50:
            raise RuntimeError("boom")
        return real(pixels, fmt)

    monkeypatch.setattr(synth_mod, "encode_image", flaky)
    with pytest.raises(RuntimeError, match="boom"):
        _make(tmp_path / "d", n=100)
    assert list(tmp_path.iterdir()) == []


def test_decoded_pixels_follow_the_true_prototype(tmp_path: Path) -> None:
    """An easy sample correlates best with its own class prototype."""
    cfg = SynthConfig(n=400, image_size=16, seed=8)
    m = make_synth(tmp_path / "d", cfg)
    truth = SynthTruth.load(tmp_path / "d")
    protos = synth_mod.prototypes(cfg).reshape(10, -1)
    easy = np.flatnonzero((truth.difficulty < 0.15) & (np.abs(truth.shift).sum(1) == 0))
    assert len(easy) >= 5
    _, store = open_dataset(tmp_path / "d")
    for i in easy:
        x = decode(store.read(m.keys[i]), m.keys[i]).reshape(-1)
        assert int(np.argmax(protos @ (x - x.mean()))) == truth.true_label[i]


def test_render_matches_the_written_png_files(tmp_path: Path) -> None:
    """In-memory pixels (for callers that skip the files) equal the decoded files."""
    cfg = SynthConfig(n=1200, image_size=6, seed=12)
    m = make_synth(tmp_path / "d", cfg)
    pixels = synth_mod.render(cfg, ground_truth(cfg), synth_mod.prototypes(cfg), 1000, 1200)
    _, store = open_dataset(tmp_path / "d")
    files = decode_many(store.read_many(m.keys[1000:1200]), m.keys[1000:1200])
    np.testing.assert_array_equal(files, pixels.transpose(0, 3, 1, 2) / np.float32(255.0))
    with pytest.raises(HotsetError, match="not a multiple"):
        synth_mod.render(cfg, ground_truth(cfg), synth_mod.prototypes(cfg), 5, 10)


def test_easy_redraws_that_share_of_difficulties_and_leaves_the_rest() -> None:
    """``easy`` (issue #43's long tail of easy samples): half the ids get difficulties
    from Beta(1, 12), the others keep theirs; ``easy=0`` draws what it always did."""
    plain, easy = ground_truth(SynthConfig(n=2000)), ground_truth(SynthConfig(n=2000, easy=0.5))
    changed = plain.difficulty != easy.difficulty
    assert changed.sum() == 1000
    assert easy.difficulty[changed].mean() < 0.12 < plain.difficulty[changed].mean()
    assert np.array_equal(ground_truth(SynthConfig(n=2000, easy=0.0)).difficulty, plain.difficulty)
    with pytest.raises(HotsetError, match=r"--easy must be in \[0, 1\], got 1.5"):
        SynthConfig(easy=1.5)


def test_draw_zero_keeps_the_streams_the_generator_always_used() -> None:
    """Draw 0 is every data set written before ``draw`` existed: its labels are still
    the permutation drawn from ``default_rng([seed, 1])``."""
    n, k = 500, 10
    truth = ground_truth(SynthConfig(n=n, seed=5))
    want = np.random.default_rng([5, 1]).permutation(np.arange(n, dtype=np.int64) % k)
    np.testing.assert_array_equal(truth.true_label, want)
    np.testing.assert_array_equal(
        ground_truth(SynthConfig(n=n, seed=5, draw=0)).difficulty, truth.difficulty
    )


def test_another_draw_is_new_samples_of_the_same_task(tmp_path: Path) -> None:
    """Draw 1 (the train suites' test set): other samples and pixels, the same class
    prototypes -- class means learned on draw 0 classify it as well as draw 0's own
    held-out part -- and with ``noise=0`` every label is the true one."""
    train = _make(tmp_path / "train", n=1600, image_size=16, seed=11, noise=0.1)
    test = _make(tmp_path / "test", n=600, image_size=16, seed=11, noise=0.0, draw=1)
    assert not set(train.hashes) & set(test.hashes)
    truth = SynthTruth.load(tmp_path / "test")
    np.testing.assert_array_equal(test.labels, truth.true_label)
    assert not truth.flipped.any()
    assert Manifest.load(tmp_path / "test").meta["synth"]["draw"] == 1
    assert "draw" not in Manifest.load(tmp_path / "train").meta["synth"]

    def pixels(root: Path, m: Manifest) -> np.ndarray:
        _, store = open_dataset(root)
        return decode_many(store.read_many(m.keys), m.keys).reshape(len(m), -1)

    x, y = pixels(tmp_path / "train", train), np.asarray(train.labels)
    fit, held = slice(0, 1000), slice(1000, 1600)
    means = np.stack([x[fit][y[fit] == c].mean(0) for c in range(10)])

    def accuracy(xs: np.ndarray, ys: np.ndarray) -> float:
        pred = ((xs[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)
        return float((pred == ys).mean())

    own = accuracy(x[held], SynthTruth.load(tmp_path / "train").true_label[held])
    other = accuracy(pixels(tmp_path / "test", test), np.asarray(test.labels))
    assert other > 0.5  # chance is 0.1: the same classes
    assert abs(other - own) < 0.08
