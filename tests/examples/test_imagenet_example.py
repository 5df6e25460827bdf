"""examples/imagenet_style.py as users run it, on a small ImageNet-like tree (issue #28).

The tree is ImageNet's layout, ``DATA/{train,val}/CLASS/*``, 3 classes of 16x16
images (stripes across, stripes down, diagonals), a quarter of them grayscale and
half JPEG, half PNG: the example imports it by split and decodes every image to RGB,
as torchvision's ImageFolder would. Real processes: one, then resumed from its
checkpoint, and two ranks under torchrun with DDP on gloo.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from hotset.data import Manifest
from process_support import run_job, run_torchrun

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TRAIN, VAL = 20, 8  # images per class


def _write_tree(root: Path, size: int = 16) -> Path:
    from PIL import Image

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:size, 0:size]
    patterns = [(yy // 2) % 2, (xx // 2) % 2, ((xx + yy) // 2) % 2]
    for split, n in (("train", TRAIN), ("val", VAL)):
        for c, pattern in enumerate(patterns):
            folder = root / split / f"n{c:08d}"
            folder.mkdir(parents=True)
            for i in range(n):
                gray = pattern * 160 + 40 + rng.normal(0, 25, (size, size))
                rgb = np.clip(gray[..., None] * rng.uniform(0.6, 1.0, 3), 0, 255)
                image = Image.fromarray(rgb.astype(np.uint8), "RGB")
                image = image.convert("L") if i % 4 == 0 else image
                fmt = "JPEG" if i % 2 else "PNG"
                image.save(folder / f"{split}_{i:04d}.{fmt.lower()}", format=fmt)
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tree, imported as a user does it once: ``hotset data import DATA``."""
    root = _write_tree(tmp_path_factory.mktemp("imagenet-like") / "data")
    command = "from hotset.cli import main; main()"
    out, _ = run_job([sys.executable, "-c", command, "data", "import", str(root), "-q"])
    assert out.startswith(f"{root} is split into train, val: one data set per split, 3 classes")
    for split, n in (("train", TRAIN), ("val", VAL)):  # labels agreeing between splits
        manifest = Manifest.load(root / split)
        assert len(manifest) == 3 * n and manifest.num_classes == 3
        assert np.bincount(manifest.labels).tolist() == [n] * 3
    return root


def _run(*args: str) -> str:
    out, _ = run_job([sys.executable, *args], cwd=EXAMPLES)
    return out


def _accuracies(out: str) -> list[float]:
    return [float(a) for a in re.findall(r"^ \* Acc@1 ([0-9.]+)$", out, re.M)]


def test_one_process_trains_checkpoints_and_resumes(tree: Path, tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    args = ["imagenet_style.py", str(tree), "--checkpoint-dir", str(ckpt)]
    out = _run(*args, "--epochs", "2", "-j", "2")  # real DataLoader workers decode
    assert len(_accuracies(out)) == 2 and _accuracies(out)[-1] > 60.0, out[-2000:]
    assert "rank 0: best Acc@1" in out and "system lru" in out
    resumed = _run(*args, "--epochs", "3", "-j", "0", "--resume", str(ckpt))
    assert "=> resumed from epoch 2" in resumed
    assert re.findall(r"^Epoch: \[(\d+)\]", resumed, re.M) == ["2"], resumed[-2000:]
    assert len(_accuracies(resumed)) == 1


def test_two_ranks_under_torchrun(tree: Path, tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    args = ["imagenet_style.py", str(tree), "--distributed", "--cache", "100%", "-j", "0"]
    args += ["--epochs", "2", "--checkpoint-dir", str(ckpt)]
    outs = run_torchrun(args, nproc=2, logs=tmp_path / "logs", cwd=EXAMPLES)
    for rank, out in outs.items():
        assert re.findall(r"^rank (\d): best Acc@1", out, re.M) == [str(rank)], out[-2000:]
        # each rank trained its shard: 30 of the 60 training images per epoch
        assert re.findall(r"^Epoch: \[0\]\[0/(\d+)\]", out, re.M) == ["2"], out[-2000:]
    finals = [re.findall(r"^rank \d: best Acc@1 ([0-9.]+)", out, re.M) for out in outs.values()]
    assert finals[0] == finals[1]  # one model, the whole val set on each rank
    assert sorted(p.name for p in ckpt.glob("*.pt")) == [
        "checkpoint.rank0.pt",
        "checkpoint.rank1.pt",
    ]


def test_the_plain_counterpart_runs_and_the_port_is_a_small_diff(
    tree: Path, tmp_path: Path
) -> None:
    out = _run(
        "imagenet_style_plain.py",
        str(tree),
        "-j",
        "0",
        "--epochs",
        "1",
        "--checkpoint-dir",
        str(tmp_path),
    )
    assert len(_accuracies(out)) == 1 and "rank 0: best Acc@1" in out
    plain = (EXAMPLES / "imagenet_style_plain.py").read_text().splitlines()
    port = (EXAMPLES / "imagenet_style.py").read_text().splitlines()

    def code(lines: list[str]) -> list[str]:
        return lines[lines.index('"""', 1) + 1 :]  # after the module docstring

    diff = [
        ln
        for ln in difflib.unified_diff(code(plain), code(port), lineterm="", n=0)
        if ln[:1] in "+-" and ln[:3] not in ("+++", "---") and ln[1:].strip()
    ]
    added = [ln for ln in diff if ln.startswith("+")]
    removed = [ln for ln in diff if ln.startswith("-")]
    assert (len(added), len(removed)) == (17, 13), diff  # docs/usage.md states these
