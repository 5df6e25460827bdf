"""``hotset simulate``: the JSON contract, sweeps and plots, and exit code 2 on bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hotset.cli import main
from hotset.samplers.random import RandomSampler
from hotset.sim.trace import load_trace

CONTRACT = ["policy", "requests", "hits", "misses", "hit_ratio", "bytes_read"]


def _ok(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    main(["simulate", *args])  # returns normally on success
    return capsys.readouterr().out


def _fails(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", *args])
    assert exc.value.code == 2
    return capsys.readouterr().err


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "trace.txt"
    path.write_text("1\n2\n1\n3\n1\n2\n")
    return path


def test_trace_json_is_exactly_the_contract(
    capsys: pytest.CaptureFixture[str], trace_file: Path
) -> None:
    out = _ok(capsys, "--trace", str(trace_file), "--policy", "lru", "--cache-items", "2", "--json")
    result = json.loads(out)
    assert list(result) == CONTRACT
    assert (result["requests"], result["hits"], result["misses"]) == (6, 2, 4)


def test_sizes_make_bytes_read_bytes(
    capsys: pytest.CaptureFixture[str], trace_file: Path, tmp_path: Path
) -> None:
    sizes = tmp_path / "sizes.txt"
    sizes.write_text("5\n100\n30\n7\n")  # ids 0..3; the dataset is 142 bytes
    out = _ok(
        capsys,
        *("--trace", str(trace_file), "--policy", "nocache", "--cache-frac", "0.5"),
        *("--sizes", str(sizes), "--json"),
    )
    assert json.loads(out)["bytes_read"] == 100 + 30 + 100 + 7 + 100 + 30


def test_verbose_adds_capacities(capsys: pytest.CaptureFixture[str], trace_file: Path) -> None:
    out = _ok(
        capsys,
        "--trace",
        str(trace_file),
        "--policy",
        "fifo",
        "--cache-frac",
        "0.5",
        "-v",
        "--json",
    )
    result = json.loads(out)
    assert list(result)[:6] == CONTRACT
    assert result["capacity_items"] == 1 and result["substitutions"] == 0


def test_table_without_json(capsys: pytest.CaptureFixture[str], trace_file: Path) -> None:
    out = _ok(capsys, "--trace", str(trace_file), "--policy", "lru,belady", "--cache-items", "2")
    lines = out.strip().splitlines()
    assert lines[0].split() == ["policy", "cache_items", *CONTRACT[1:]]
    assert [line.split()[0] for line in lines[1:]] == ["lru", "belady"]


def test_sampler_mode_sweep_plot_and_written_trace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plot, written = tmp_path / "hit.png", tmp_path / "orders.npy"
    out = _ok(
        capsys,
        *("--sampler", "random", "--n", "300", "--epochs", "3", "--seed", "4"),
        *("--policy", "lru,minio,belady", "--cache-frac", "0.1,0.5"),
        *("--plot", str(plot), "--write-trace", str(written), "--json"),
    )
    results = json.loads(out)
    assert [(r["policy"], r["cache_frac"]) for r in results] == [
        (p, f) for p in ("lru", "minio", "belady") for f in (0.1, 0.5)
    ]
    assert all(r["requests"] == 900 for r in results)
    assert [r["hits"] for r in results if r["policy"] == "minio"] == [2 * 30, 2 * 150]
    assert plot.read_bytes()[:4] == b"\x89PNG"
    assert json.loads(plot.with_suffix(".json").read_text()) == results
    sampler = RandomSampler(300, seed=4)
    expected = np.concatenate([sampler.global_order(e) for e in range(3)])
    assert load_trace(written).tolist() == expected.tolist()


def test_written_text_trace_replays_to_the_same_answer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    written = tmp_path / "orders.txt"
    args = ("--policy", "fifo", "--cache-items", "40", "--json")
    live = json.loads(
        _ok(
            capsys,
            "--sampler",
            "random",
            "--n",
            "100",
            "--epochs",
            "2",
            "--write-trace",
            str(written),
            *args,
        )
    )
    replayed = json.loads(_ok(capsys, "--trace", str(written), *args))
    assert replayed == live


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("", (), "is empty"),
        ("1\n-2\n", (), "negative"),
        ("1\nfoo\n", (), "line 2: 'foo' is not an integer id"),
        ("1\n2\n", ("--cache-items", "0"), "--cache-items must be a positive integer"),
        ("1\n2\n", ("--cache-frac", "0"), r"--cache-frac must be in \(0, 1\]"),
        ("1\n2\n", ("--cache-frac", "1.5"), r"--cache-frac must be in \(0, 1\]"),
        ("1\n2\n", ("--cache-frac", "-0.1"), r"--cache-frac must be in \(0, 1\]"),
        ("1\n2\n", ("--cache-frac", "0.5", "--policy", "nope"), "unknown policy 'nope'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    content: str,
    extra: tuple[str, ...],
    message: str,
) -> None:
    path = tmp_path / "t.txt"
    path.write_text(content)
    args = ["--trace", str(path), *extra]
    if "--policy" not in extra:
        args += ["--policy", "lru"]
    if not any(a.startswith("--cache") for a in extra):
        args += ["--cache-items", "1"]
    err = _fails(capsys, *args)
    assert err.startswith("hotset: error:") and err.count("\n") == 1
    assert re.search(message, err)


def test_sizes_of_the_wrong_length(
    capsys: pytest.CaptureFixture[str], trace_file: Path, tmp_path: Path
) -> None:
    sizes = tmp_path / "sizes.txt"
    sizes.write_text("1\n1\n")  # ids 0..1, but the trace uses id 3
    err = _fails(
        capsys,
        "--trace",
        str(trace_file),
        "--policy",
        "lru",
        "--cache-items",
        "1",
        "--sizes",
        str(sizes),
    )
    assert "sizes cover 2 ids" in err and "id 3" in err
    err = _fails(
        capsys,
        *("--sampler", "random", "--n", "5", "--policy", "lru", "--cache-items", "1"),
        *("--sizes", str(sizes)),
    )
    assert "has 2 sizes but the dataset has 5 ids" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--policy", "lru"), "exactly one of --cache-items or --cache-frac"),
        (("--policy", "lru", "--cache-items", "1", "--cache-frac", "0.5"), "exactly one of"),
        (("--cache-items", "1"), "--policy is required"),
        (("--policy", "lru", "--cache-frac", "a,b"), "expected numbers"),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], trace_file: Path, args: tuple[str, ...], message: str
) -> None:
    err = _fails(capsys, "--trace", str(trace_file), *args)
    assert message in err


def test_mode_errors_exit_2(capsys: pytest.CaptureFixture[str], trace_file: Path) -> None:
    assert "exactly one of --trace, --sampler or --system" in _fails(capsys, "--policy", "lru")
    err = _fails(capsys, "--trace", str(trace_file), "--sampler", "random")
    assert "got --trace, --sampler" in err
    assert "--system needs --dataset" in _fails(capsys, "--system", "lru", "--cache-frac", "0.2")
    assert "--sampler needs --n" in _fails(
        capsys, "--sampler", "random", "--policy", "lru", "--cache-items", "1"
    )


def test_system_mode_draws_its_plot(tmp_path: Path) -> None:
    from cli_support import run_cli
    from hotset.data import SynthConfig, make_synth

    data = tmp_path / "ds"
    make_synth(data, SynthConfig(n=200, image_size=8, classes=3, seed=2), workers=1)
    png = tmp_path / "epochs.png"
    code, out = run_cli(
        "simulate",
        "--system",
        "lru",
        "--dataset",
        str(data),
        "--cache-frac",
        "0.3",
        "--epochs",
        "2",
        "--plot",
        str(png),
    )
    assert code == 0, out
    assert png.stat().st_size > 10_000  # a real PNG with three panels, not an empty file


def test_system_plot_title_names_the_system_its_options_and_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.figure

    from cli_support import run_cli
    from hotset.data import SynthConfig, make_synth
    from hotset.units import format_bytes

    titles: list[str] = []
    real = matplotlib.figure.Figure.suptitle

    def spy(self: matplotlib.figure.Figure, t: str, **kw: Any) -> Any:
        titles.append(t)
        return real(self, t, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "suptitle", spy)
    data = tmp_path / "ds"
    make_synth(data, SynthConfig(n=200, image_size=8, classes=3, seed=2), workers=1)
    args = ["simulate", "--system", "shade", "--option", "coverage_floor=0.05"]
    args += ["--dataset", str(data), "--cache-frac", "0.25", "--epochs", "2"]
    code, out = run_cli(*args, "--plot", str(tmp_path / "e.png"), "--out", str(tmp_path / "r.json"))
    assert code == 0, out
    capacity = json.loads((tmp_path / "r.json").read_text())["capacity_bytes"]
    assert capacity > 0
    assert titles == [
        f"shade[coverage_floor=0.05]: cache 25% of training bytes ({format_bytes(capacity)}), "
        "2 epochs (simulated)"
    ]


def _table(out: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the epoch table that starts ``out``."""
    lines = out.strip().splitlines()
    header = lines[0].split()
    rows = [line.split() for line in lines[1:] if line.split()[0].isdigit()]
    return header, rows


def test_system_table_shows_the_default_columns_and_v_every_counter(tmp_path: Path) -> None:
    from cli_support import run_cli
    from hotset.data import SynthConfig, make_synth

    data = tmp_path / "ds"
    make_synth(data, SynthConfig(n=200, image_size=8, classes=3, seed=2), workers=1)
    saved = tmp_path / "live.json"
    args = ("simulate", "--system", "lru", "--dataset", str(data), "--cache-frac", "0.3")
    code, out = run_cli(*args, "--epochs", "2", "--out", str(saved))
    assert code == 0, out
    header, rows = _table(out)
    assert header == [
        "epoch", "exact_hit_ratio", "substitutions", "storage_requests",
        "unique_ids_trained", "never_trained", "val_accuracy", "modeled_epoch_seconds",
    ]  # fmt: skip
    epochs = json.loads(saved.read_text())["epochs"]
    # the table's cells are the JSON's numbers, epoch by epoch
    assert [int(r[header.index("storage_requests")]) for r in rows] == [
        e["storage_requests"] for e in epochs
    ]
    assert "-v: every counter" in out
    assert out.count("totals:") == 1 and "storage_bytes=" not in out
    code, verbose = run_cli(*args, "--epochs", "2", "-v")
    assert code == 0, verbose
    full_header, full_rows = _table(verbose)
    assert full_header == list(epochs[0]) and len(full_header) > 2 * len(header)
    assert len(full_rows) == 2 and "storage_bytes=" in verbose


def test_a_system_spec_and_option_flags_reach_the_live_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli_support import run_cli
    from hotset.data import SynthConfig, make_synth
    from spec_support import record_builds

    data = tmp_path / "ds"
    make_synth(data, SynthConfig(n=200, image_size=8, classes=3, seed=2), workers=1)
    built = record_builds(monkeypatch, "hotset.sim.live")
    code, out = run_cli(
        "simulate", "--system", "shade[coverage_floor=0.05]", "--option", "anneal-from=1",
        "--dataset", str(data), "--cache-frac", "0.3", "--epochs", "2", "--json",
    )  # fmt: skip
    assert code == 0, out
    (system,) = built
    assert (system.sampler.coverage_floor, system.sampler.anneal_from) == (0.05, 1)
    result = json.loads(out)
    assert result["system"] == "shade"
    assert result["config"]["options"] == {"coverage_floor": 0.05, "anneal_from": 1}
    assert result["epochs"][1]["order"] == "anneal"  # anneal_from=1 decided epoch 1's order


@pytest.mark.parametrize(
    ("system", "extra", "message"),
    [
        (
            "shade[coverage_flor=0.05]",
            (),
            "system 'shade' has no option 'coverage_flor' (did you mean 'coverage_floor'?); "
            "its options are rep_factor,",
        ),
        (
            "shadee[coverage_floor=0.05]",
            (),
            "unknown system 'shadee' (did you mean 'shade'?); choose from pytorch,",
        ),
        ("quiver[probe=ten]", (), "system 'quiver': option probe got 'ten', expected int"),
        ("quiver", ("--option", "probe=ten"), "option probe got 'ten', expected int"),
        (
            "quiver[probe=2]",
            ("--option", "probe=3"),
            "option 'probe' of system 'quiver' is given twice: in the spec 'quiver[probe=2]' "
            "and in --option",
        ),
    ],
)
def test_a_bad_system_spec_is_named_before_any_work(
    capsys: pytest.CaptureFixture[str], system: str, extra: tuple[str, ...], message: str
) -> None:
    # the dataset does not exist: the spec is refused before anything is opened
    err = _fails(capsys, "--system", system, *extra, "--dataset", "nowhere", "--cache-frac", "0.2")
    assert message in err


def test_the_options_generated_from_the_dataclass_are_the_command_line_of_old() -> None:
    # SimulateOptions declares most options; the rest keep their decorators. Together
    # they are the command line other tools rely on (DESIGN.md): names, defaults, types.
    from hotset.cli.simulate import simulate

    params = {p.name: p for p in simulate.params}
    flags = {opt for p in simulate.params for opt in (*p.opts, *p.secondary_opts)}
    assert flags == {
        "--trace", "--sampler", "--system", "--policy", "--cache-items", "--cache-frac",
        "--sizes", "--n", "--epochs", "--seed", "--write-trace", "--plot", "--verbose", "-v",
        "--dataset", "--model", "--batch-size", "--lr", "--val-frac", "--store", "--latency-ms",
        "--bandwidth-mb-s", "--concurrency", "--compute-ms-per-batch", "--nodes", "--scope",
        "--sample-bytes", "--net-latency-ms", "--net-gb-s", "--option", "--out", "--progress",
        "--no-progress", "--json",
    }  # fmt: skip
    defaults = {
        "seed": 0, "model": "auto", "batch_size": 128, "lr": 0.05, "val_frac": 0.1,
        "compute_ms_per_batch": 0.0, "scope": "private,pooled", "net_latency_ms": 0.1,
        "net_gb_s": 1.25, "progress": False, "epochs": None, "n": None, "cache_frac": None,
    }  # fmt: skip
    assert {name: params[name].default for name in defaults} == defaults
    assert params["trace_path"].opts == ["--trace"] and params["sizes_path"].opts == ["--sizes"]
