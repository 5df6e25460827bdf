"""The entry point: help, version, and how errors become exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hotset import __version__
from hotset.cli import main


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from hotset.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_help_lists_every_command() -> None:
    proc = _run("--help")
    assert proc.returncode == 0
    for name in ("data", "simulate", "systems", "bench", "demo"):
        assert name in proc.stdout


def test_version() -> None:
    proc = _run("--version")
    assert proc.returncode == 0
    assert __version__ in proc.stdout


def test_unknown_command_is_a_usage_error() -> None:
    proc = _run("no-such-command")
    assert proc.returncode == 2
    assert "no-such-command" in proc.stderr


def test_hotset_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "sim", "--accesses", "0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hotset: error:")
    assert "--accesses" in err
    assert "\n" not in err


def test_click_usage_errors_share_the_one_prefix() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "from hotset.cli import main; main()", "cache", "ls", "--nope"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stderr.startswith("hotset: error: No such option '--nope'")
    assert "hotset cache ls --help" in out.stderr and "Error:" not in out.stderr
