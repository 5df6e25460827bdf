"""Where ``hotset bench`` writes without ``--root``: a user data directory, wherever the
run starts, a hotset checkout included (its committed record is written only with
``--record``); never ``./benchmarks`` of an arbitrary directory."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli_support import run_cli
from hotset.cli import cli

_SIM = ("bench", "sim", "--accesses", "2000", "--n", "200", "--policy", "lru")


def _project(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "0"\n')
    return folder


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home, an XDG data home and a work directory, apart; the run starts in ``work``."""
    home, xdg, work = tmp_path / "home", tmp_path / "xdg", tmp_path / "work"
    for folder in (home, xdg, work):
        folder.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(xdg))
    monkeypatch.chdir(work)
    return {"home": home, "xdg": xdg, "work": work}


def _sim_result(root: Path) -> dict[str, object]:
    doc = json.loads((root / "benchmarks" / "results" / "sim.json").read_text())
    assert doc["suite"] == "sim"
    return dict(doc["result"])


def test_outside_a_checkout_results_go_to_the_xdg_data_home(places: dict[str, Path]) -> None:
    code, out = run_cli(*_SIM)
    assert code == 0, out
    root = places["xdg"] / "hotset"
    assert _sim_result(root)["table"]
    assert f"wrote {root / 'benchmarks' / 'results' / 'sim.json'}" in out
    assert (root / "benchmarks" / "README.md").exists()
    assert not (places["work"] / "benchmarks").exists()
    assert list(places["work"].iterdir()) == []


@pytest.mark.parametrize("xdg", [None, "relative/data"])
def test_without_an_absolute_xdg_data_home_results_go_under_home(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch, xdg: str | None
) -> None:
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME")
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)  # the XDG spec: relative paths are invalid
    code, out = run_cli(*_SIM)
    assert code == 0, out
    assert _sim_result(places["home"] / ".local" / "share" / "hotset")["table"]
    assert list(places["work"].iterdir()) == []


def test_inside_a_checkout_results_go_to_the_user_data_directory(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = _project(places["work"] / "hotset-src", "hotset")
    monkeypatch.chdir(checkout)
    code, out = run_cli(*_SIM)
    assert code == 0, out
    assert _sim_result(places["xdg"] / "hotset")["table"]
    assert not (checkout / "benchmarks").exists()  # the committed record is untouched


def test_a_run_inside_a_git_checkout_leaves_git_status_clean(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = _project(places["work"] / "repo", "hotset")
    (checkout / "benchmarks" / "results").mkdir(parents=True)
    (checkout / "benchmarks" / "results" / "sim.json").write_text("{}\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(checkout)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "record"]):
        subprocess.run([*git, *args], check=True)
    sub = checkout / "benchmarks"
    monkeypatch.chdir(sub)
    code, out = run_cli(*_SIM)
    assert code == 0, out
    status = subprocess.run(
        [*git, "status", "--porcelain"], check=True, capture_output=True, text=True
    )
    assert status.stdout == ""
    assert _sim_result(places["xdg"] / "hotset")["table"]


def test_record_writes_the_checkout_from_any_subdirectory(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = _project(places["work"] / "hotset-src", "hotset")
    # another project nested inside the checkout is not where hotset's results live
    deep = _project(checkout / "vendor" / "other", "other") / "sub"
    deep.mkdir()
    monkeypatch.chdir(deep)
    code, out = run_cli(*_SIM, "--record")
    assert code == 0, out
    assert _sim_result(checkout)["table"]
    assert f"wrote {checkout / 'benchmarks' / 'results' / 'sim.json'}" in out
    assert not (deep / "benchmarks").exists()
    assert not (checkout / "vendor" / "other" / "benchmarks").exists()
    assert not (places["xdg"] / "hotset").exists()


def test_record_outside_a_checkout_or_with_root_is_refused(
    places: dict[str, Path], tmp_path: Path
) -> None:
    code, out = run_cli(*_SIM, "--record")
    assert code != 0 and "is not inside one" in out and "--root" in out
    code, out = run_cli(*_SIM, "--record", "--root", str(tmp_path / "x"))
    assert code != 0 and "--root or --record, not both" in out
    assert not (places["xdg"] / "hotset").exists()
    assert list(places["work"].iterdir()) == []


def test_a_project_not_named_hotset_is_not_a_checkout(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = _project(places["work"] / "mine", "my-trainer")
    monkeypatch.chdir(elsewhere)
    code, out = run_cli(*_SIM)
    assert code == 0, out
    assert _sim_result(places["xdg"] / "hotset")["table"]
    assert not (elsewhere / "benchmarks").exists()


def test_root_given_wins_and_json_mode_says_where_it_wrote(
    places: dict[str, Path], tmp_path: Path
) -> None:
    chosen = tmp_path / "chosen"
    result = CliRunner().invoke(cli, [*_SIM, "--root", str(chosen), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == _sim_result(chosen)  # stdout is the JSON alone
    assert f"wrote {chosen / 'benchmarks' / 'results' / 'sim.json'}" in result.stderr
    assert not (places["xdg"] / "hotset").exists()
    assert list(places["work"].iterdir()) == []


def test_help_states_the_default() -> None:
    code, out = run_cli("bench", "sim", "--help")
    assert code == 0, out
    flat = " ".join(out.split())
    assert "$XDG_DATA_HOME/hotset, or ~/.local/share/hotset" in flat
    assert "never the repository's committed results unless --record" in flat
    assert "hotset source checkout holding the current directory" in flat  # --record's help
