"""``hotset advise`` end to end: table, answer lines, plot and JSON (file and stdout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli_support import run_cli
from hotset.cli import cli
from hotset.data import SynthConfig, make_synth


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli_advise") / "ds"
    make_synth(path, SynthConfig(n=300, image_size=8, classes=3, seed=5), workers=1)
    return path


def test_advise_prints_and_writes(data: Path, tmp_path: Path) -> None:
    code, out = run_cli(
        "advise",
        "--dataset",
        str(data),
        "--systems",
        "minio",
        "--sizes",
        "0.2,0.9",
        "--epochs",
        "2",
        "--target",
        "0.5",
        "--latency-ms",
        "5",
        "--plot",
        str(tmp_path / "a.png"),
        "--json",
        str(tmp_path / "a.json"),
    )
    assert code == 0, out
    assert "minio: " in out and "50% exact hits need 90% of the data (" in out
    assert "training 269 distinct samples per epoch" in out
    for head in (
        "exact hits",
        "bound",
        "substituted",
        "fetched ahead",
        "belady (run)",
        "requests/epoch",
        "bytes read/epoch",
    ):
        assert head in out
    assert "distinct trained" in out and "epoch s (modeled)" in out
    assert "Simulated: a virtual-clock store at 5 ms per request" in out
    assert "Knee: the grid size farthest above the chord" in out
    assert "[advise] 2/2: minio at 90%" in out  # progress (stderr)
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = json.loads((tmp_path / "a.json").read_text())["table"]
    assert [r["cache_frac"] for r in table] == [0.2, 0.9]
    # coverage beside the hit ratios: a column, and in the answer line
    assert "coverage" in out.splitlines()[out.splitlines().index("minio") + 1]
    answer = table[1]
    assert answer["coverage_after_first"] == pytest.approx(
        answer["unique_ids_trained_after_first"] / answer["n_train"], abs=1e-4
    )
    assert (
        f"({answer['coverage_after_first']:.0%} coverage); substitutions serve a further "
        f"{answer['substitution_ratio']:.3f} of requests"
    ) in out


def test_bare_json_prints_only_json_on_stdout(data: Path) -> None:
    args = ["advise", "--dataset", str(data), "--systems", "lru", "--sizes", "0.3"]
    result = CliRunner().invoke(cli, [*args, "--epochs", "2", "--json"])
    assert result.exit_code == 0, result.output
    parsed = json.loads(result.stdout)  # progress went to stderr, not into the JSON
    assert (
        parsed["table"][0]["system"] == "lru"
        and "storage_bytes_per_epoch_after_first" in (parsed["table"][0])
    )
    assert "[advise]" in result.stderr


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--sizes", "a,b"], "--sizes"),
        (["--sizes", "0.2,1.5"], "1.5"),
        (["--sizes", "0"], "0.0"),
        (["--systems", "lru,bogus"], "'bogus'"),
        (["--systems", "lru,bogus[a=1]"], "unknown system 'bogus'; choose from pytorch"),
        (
            ["--systems", "lru,shade[coverage_flor=0.05,anneal_from=3]"],
            "system 'shade' has no option 'coverage_flor' (did you mean 'coverage_floor'?)",
        ),
        (
            ["--systems", "shade[coverage_floor=lots]"],
            "system 'shade': option coverage_floor got 'lots', expected number",
        ),
    ],
)
def test_bad_input_is_one_line(data: Path, extra: list[str], named: str) -> None:
    code, out = run_cli("advise", "--dataset", str(data), *extra)
    assert code == 2 and named in out and out.startswith("hotset: error:"), out
    assert len(out.strip().splitlines()) == 1


def test_a_missing_dataset_is_one_line(tmp_path: Path) -> None:
    code, out = run_cli("advise", "--dataset", str(tmp_path / "none"))
    assert code == 2 and "none" in out and "does not exist" in out
    assert len(out.strip().splitlines()) == 1


def test_a_system_spec_reaches_the_simulated_system(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spec_support import record_builds

    built = record_builds(monkeypatch, "hotset.sim.live")
    code, out = run_cli(
        "advise", "--dataset", str(data), "--systems", "quiver[probe=2,evict_after_s=5]",
        "--sizes", "0.3", "--epochs", "2",
    )  # fmt: skip
    assert code == 0, out
    (system,) = built
    assert (system.policy.probe, system.policy.evict_after_s) == (2, 5)  # type: ignore[attr-defined]
    assert "quiver[probe=2,evict_after_s=5]" in out
