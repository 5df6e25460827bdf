"""`hotset data ...`: outputs and exit codes (0 ok, 1 verify failure, 2 bad input)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hotset.cli import main
from hotset.data import Manifest
from hotset.data.synth import SynthTruth
from hotset.data.writer import encode_image


def _exit_code(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("hotset: error:")
    assert "\n" not in err
    return err


def test_synth_then_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    argv = ["data", "synth", "--out", str(out), "--n", "30", "--image-size", "8"]
    assert (
        _exit_code([*argv, "--classes", "3", "--noise", "0.2", "--seed", "9", "--format", "npy"])
        == 0
    )
    captured = capsys.readouterr()
    assert "wrote 30 samples" in captured.out
    assert "synth" in captured.err  # the progress bar
    m = Manifest.load(out)
    assert m.num_classes == 3 and m.meta["seed"] == 9 and m.meta["format"] == "npy"
    assert SynthTruth.load(out).flipped.sum() == 6

    assert _exit_code(["data", "verify", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"verified 30 samples, {m.total_bytes} bytes"
    assert captured.err == ""

    (out / m.keys[3]).write_bytes(b"tampered")
    (out / m.keys[4]).unlink()
    assert _exit_code(["data", "verify", str(out), "-q"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert f"mismatch {m.keys[3]} expected {m.hashes[3]} actual " in lines[0]
    assert lines[1] == f"missing {m.keys[4]}"
    assert lines[2].startswith("FAILED")


def test_synth_draw_writes_another_draw_of_the_same_classes(tmp_path: Path) -> None:
    """``--draw 1 --noise 0``: a clean test set (other samples, no flipped label), the draw
    recorded in dataset.json; without ``--draw`` the set of draw 0."""
    base = ["data", "synth", "--n", "40", "--image-size", "8", "--seed", "2", "-q"]
    assert _exit_code([*base, "--out", str(tmp_path / "a")]) == 0
    assert _exit_code([*base, "--out", str(tmp_path / "b"), "--draw", "1", "--noise", "0"]) == 0
    a, b = Manifest.load(tmp_path / "a"), Manifest.load(tmp_path / "b")
    assert not set(a.hashes) & set(b.hashes)
    assert b.meta["synth"]["draw"] == 1 and "draw" not in a.meta["synth"]
    assert not SynthTruth.load(tmp_path / "b").flipped.any()


def test_synth_refuses_non_empty_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.txt").write_text("x")
    assert _exit_code(["data", "synth", "--out", str(tmp_path), "--n", "3", "-q"]) == 2
    assert str(tmp_path) in _error_line(capsys)
    assert _exit_code(["data", "synth", "--out", str(tmp_path), "--n", "3", "-q", "--force"]) == 0
    assert len(Manifest.load(tmp_path)) == 3


@pytest.mark.parametrize(
    ("extra", "culprit"),
    [
        (["--n", "0"], "--n"),
        (["--noise", "1.5"], "--noise"),
        (["--image-size", "3"], "--image-size"),
        (["--classes", "1"], "--classes"),
        (["--draw", "-1"], "--draw"),
    ],
)
def test_synth_bad_values_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], culprit: str
) -> None:
    assert _exit_code(["data", "synth", "--out", str(tmp_path / "o"), "-q", *extra]) == 2
    assert culprit in _error_line(capsys)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("extra", [["--format", "gif"], ["--channels", "2"], ["--n", "many"]])
def test_synth_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    assert _exit_code(["data", "synth", "--out", str(tmp_path / "o"), *extra]) == 2
    assert extra[0] in capsys.readouterr().err


def test_digits_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(["data", "digits", "--out", str(tmp_path / "g"), "-q"]) == 0
    printed = capsys.readouterr().out
    assert "wrote 1797 samples" in printed
    assert Manifest.load(tmp_path / "g").num_classes == 10
    # a train/val split by default, beside the whole set
    assert "split/train: 1618 samples" in printed and "split/val: 179 samples" in printed
    assert len(Manifest.load(tmp_path / "g" / "split" / "val")) == 179
    assert _exit_code(["data", "digits", "--out", str(tmp_path / "h"), "--val", "0", "-q"]) == 0
    assert not (tmp_path / "h" / "split").exists()
    assert _exit_code(["data", "digits", "--out", str(tmp_path / "i"), "--val", "0.9"]) == 2
    assert "got 0.9" in capsys.readouterr().err


def test_import_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "tree"
    for cls in ("b", "a"):
        (root / cls).mkdir(parents=True)
        (root / cls / "1.png").write_bytes(encode_image(np.zeros((2, 2), dtype=np.uint8), "png"))
    assert _exit_code(["data", "import", str(root), "-q"]) == 0
    assert "imported 2 samples" in capsys.readouterr().out
    assert Manifest.load(root).labels.tolist() == [0, 1]
    assert _exit_code(["data", "import", str(root), "-q", "--out", str(tmp_path / "m")]) == 0
    assert Manifest.load(tmp_path / "m").meta["root"] == str(root.resolve())
    assert _exit_code(["data", "verify", str(tmp_path / "m"), "-q"]) == 0
    capsys.readouterr()

    empty = tmp_path / "empty"
    empty.mkdir()
    assert _exit_code(["data", "import", str(empty)]) == 2
    assert str(empty) in _error_line(capsys)


def test_verify_missing_dataset_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(["data", "verify", str(tmp_path / "nope")]) == 2
    assert "nope" in _error_line(capsys)
    (tmp_path / "manifest.csv").write_text("id,key,size,label,xxh3\n0,a.png,x,0,0123456789abcdef\n")
    assert _exit_code(["data", "verify", str(tmp_path)]) == 2
    assert "line 2: field size" in _error_line(capsys)


def test_real_entry_point_exit_codes(tmp_path: Path) -> None:
    """Through a fresh interpreter, as a shell sees it."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from hotset.cli import main; main()", *args],
            capture_output=True,
            text=True,
            check=False,
        )

    out = tmp_path / "s"
    assert (
        run("data", "synth", "--out", str(out), "--n", "5", "--image-size", "4", "-q").returncode
        == 0
    )
    m = Manifest.load(out)
    (out / m.keys[0]).write_bytes(b"")
    proc = run("data", "verify", str(out), "-q")
    assert proc.returncode == 1
    assert f"mismatch {m.keys[0]}" in proc.stdout


def test_pack_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    assert (
        _exit_code(["data", "synth", "--out", str(out), "--n", "20", "--image-size", "4", "-q"])
        == 0
    )
    capsys.readouterr()
    assert _exit_code(["data", "pack", str(out), "--chunk-size", "8", "--shuffle-seed", "3"]) == 0
    captured = capsys.readouterr()
    m = Manifest.load(out)
    assert captured.out.strip() == (
        f"packed 20 samples into 3 chunks (shuffled with seed 3), {m.total_bytes} bytes -> "
        f"{out / 'chunks.json'}"
    )
    assert "pack" in captured.err  # the progress bar
    assert sorted(p.name for p in (out / "chunks").iterdir()) == [
        "c000000.bin",
        "c000001.bin",
        "c000002.bin",
    ]

    assert _exit_code(["data", "pack", str(out), "-q"]) == 0  # defaults: 64 per chunk
    captured = capsys.readouterr()
    assert "into 1 chunks" in captured.out and captured.err == ""
    assert [p.name for p in (out / "chunks").iterdir()] == ["c000000.bin"]


def test_pack_cli_bad_input_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    assert (
        _exit_code(["data", "synth", "--out", str(out), "--n", "6", "--image-size", "4", "-q"]) == 0
    )
    capsys.readouterr()
    for extra, culprit in (
        (["--chunk-size", "0"], "--chunk-size"),
        (["--shuffle-seed", "-1"], "--shuffle-seed"),
    ):
        assert _exit_code(["data", "pack", str(out), "-q", *extra]) == 2
        assert culprit in _error_line(capsys)
    assert _exit_code(["data", "pack", str(out), "--chunk-size", "many"]) == 2
    assert "--chunk-size" in capsys.readouterr().err
    assert _exit_code(["data", "pack", str(tmp_path / "nope")]) == 2
    assert "nope" in _error_line(capsys)
    assert not (out / "chunks.json").exists()

    m = Manifest.load(out)
    (out / m.keys[2]).write_bytes(b"tampered")
    assert _exit_code(["data", "pack", str(out), "-q"]) == 2
    assert f"sample 2 ('{m.keys[2]}')" in _error_line(capsys)
    assert not (out / "chunks.json").exists() and not (out / "chunks").exists()


def test_synth_to_a_place_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    """Issue #25 item 7: ``--out /proc/x`` was a traceback; now one line and exit code 2."""
    args = ["data", "synth", "--out", "/proc/x", "--n", "5", "--image-size", "4", "-q"]
    proc = subprocess.run(
        [sys.executable, "-c", "from hotset.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("hotset: error: cannot write the data set to '/proc/x': ")
    assert "writable directory" in err


@pytest.mark.parametrize("command", [["digits"], ["synth", "--n", "5", "--image-size", "4"]])
def test_data_to_an_unwritable_out_is_one_line(command: list[str]) -> None:
    """``hotset data digits --out /proc/x`` was a traceback too (the writer's temp dir)."""
    argv = ["data", *command, "--out", "/proc/x", "-q"]
    proc = subprocess.run(
        [sys.executable, "-c", "from hotset.cli import main; main()", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    err = proc.stderr.strip()
    assert proc.returncode == 2 and "\n" not in err and "Traceback" not in err, err
    assert err.startswith("hotset: error: cannot write the data set to '/proc/x': ")


def test_import_cli_says_which_links_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "tree"
    (root / "c").mkdir(parents=True)
    (root / "c" / "a.png").write_bytes(encode_image(np.zeros((4, 4), np.uint8), "png"))
    (tmp_path / "s.png").write_bytes(encode_image(np.ones((4, 4), np.uint8), "png"))
    (root / "c" / "s.png").symlink_to(tmp_path / "s.png")
    assert _exit_code(["data", "import", str(root), "-q"]) == 0
    captured = capsys.readouterr()
    assert "imported 1 samples" in captured.out
    assert f"(skipped 1 symbolic links leading outside {root})" in captured.out
    assert captured.err.strip() == (
        f"hotset: warning: skipped 1 symbolic link(s) in {str(root)!r} that lead outside it: "
        "'c/s.png' (a data set reads only files inside its root; copy them in to import them)"
    )
    assert _exit_code(["data", "import", str(root), "-q", "--force", "--out", "/proc/x/m"]) == 2
    assert "cannot write the manifest to '/proc/x/m'" in _error_line(capsys)
