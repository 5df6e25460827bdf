"""examples/lightning_mnist.py as users run it: one process or DDP on two, and resumed.

Each run is real processes (Lightning's DDP launches the second one by running
the script again). ``lightning_job.py`` runs the example's ``main`` with a
recorder of each rank's trained batches and final weights, so a run resumed
from a mid-epoch checkpoint is compared batch for batch with the uninterrupted
run that wrote the checkpoint.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from hotset.data import make_digits
from process_support import run_job

pytest.importorskip("lightning")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
JOB = Path(__file__).resolve().parent / "lightning_job.py"
#: batches of 64 over the 1,617 training digits: 26 per epoch, 13 per rank of two
BATCHES = {1: 26, 2: 13}


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lightning-digits") / "digits"
    make_digits(root)
    return root


def _run(
    tmp_path: Path, digits: Path, tag: str, *args: str
) -> tuple[dict[int, float], list[dict[str, Any]], str]:
    """One run: each rank's final accuracy, each rank's record, and what it printed."""
    out, _ = run_job(
        [
            sys.executable,
            str(JOB),
            str(tmp_path / tag),
            "--data",
            str(digits),
            "--out",
            str(tmp_path / f"{tag}-out"),
            "--epochs",
            "2",
            *args,
        ],
        cwd=EXAMPLES,
    )
    finals = re.findall(r"rank (\d) of \d: final accuracy ([0-9.]+)", out)
    records = [json.loads(p.read_text()) for p in sorted(tmp_path.glob(f"{tag}.rank*.json"))]
    return {int(r): float(a) for r, a in finals}, records, out


@pytest.mark.slow
@pytest.mark.parametrize(("system", "devices"), [("shade", 2), ("quiver", 1)])
def test_the_lightning_example_resumes_exactly(
    tmp_path: Path, digits: Path, system: str, devices: int
) -> None:
    """Checkpointed mid-epoch 0, resumed: the rest of epoch 0 and all of epoch 1 are the
    same batches on every rank, and the weights end bit for bit the same."""
    step = BATCHES[devices] - 3
    common = ("--system", system, "--devices", str(devices))
    finals, full, out = _run(tmp_path, digits, "full", *common, "--save-every", str(step))
    assert sorted(finals) == list(range(devices)), out[-3000:]
    assert len(set(finals.values())) == 1  # one model on every rank
    assert min(finals.values()) > 0.2, out[-3000:]  # learned something (chance is 0.1)
    for record in full:  # each rank trained its own shard: 13 batches an epoch under DDP
        assert len(record["batches"]) == 2 * BATCHES[devices]
    ckpt = tmp_path / "full-out" / "checkpoints" / f"epoch=0-step={step}.ckpt"
    resumed_finals, resumed, out = _run(
        tmp_path, digits, "resumed", *common, "--ckpt-path", str(ckpt)
    )
    assert resumed_finals == finals, out[-3000:]
    assert len(resumed) == devices
    for whole, rest in zip(full, resumed, strict=True):
        assert rest["batches"] == whole["batches"][step:]
        assert rest["weights"] == whole["weights"]


@pytest.mark.slow
@pytest.mark.parametrize(("system", "devices"), [("shade", 1), ("quiver", 2)])
def test_the_lightning_example_trains(
    tmp_path: Path, digits: Path, system: str, devices: int
) -> None:
    finals, records, out = _run(
        tmp_path, digits, "run", "--system", system, "--devices", str(devices)
    )
    assert sorted(finals) == list(range(devices)), out[-3000:]
    assert min(finals.values()) > 0.2, out[-3000:]
    assert [len(r["batches"]) for r in records] == [2 * BATCHES[devices]] * devices
    assert out.count("distinct trained") == devices  # each rank's summary


def test_the_lightning_port_changes_a_few_lines() -> None:
    """Beyond the docstring and imports: the loader, the callback, the step's return."""
    plain = (EXAMPLES / "lightning_mnist_plain.py").read_text().splitlines()
    port = (EXAMPLES / "lightning_mnist.py").read_text().splitlines()

    def code(lines: list[str]) -> list[str]:
        body = lines[lines.index('"""', 1) + 1 :]  # after the module docstring
        return [ln for ln in body if not ln.startswith(("import ", "from "))]

    diff = list(difflib.unified_diff(code(plain), code(port), lineterm="", n=0))
    added = [ln for ln in diff if ln.startswith("+") and not ln.startswith("+++")]
    removed = [ln for ln in diff if ln.startswith("-") and not ln.startswith("---")]
    assert 0 < len(added) <= 9 and len(removed) <= 5, (added, removed)
