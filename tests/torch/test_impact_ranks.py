"""ImPACT under data parallelism (§III-E): the ranks split S, re-evaluate their parts,
and every rank's table gets every part's losses; real processes (gloo, torchrun)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from process_support import run_torchrun

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from rank_impact_job import EPOCHS, eval_loss  # noqa: E402


def _ranks(dataset_dir: Path, out: Path, world: int) -> list[dict[str, Any]]:
    out.mkdir()
    run_torchrun(
        [str(HERE / "rank_impact_job.py"), str(dataset_dir), str(out)],
        nproc=world,
        logs=out.parent / "logs",
    )
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]


def test_two_ranks_re_evaluate_disjoint_parts_of_s_and_share_the_losses(
    dataset_dir: Path, tmp_path: Path
) -> None:
    ranks = _ranks(dataset_dir, tmp_path / "out", 2)
    first, second = ranks
    assert first["s_ids"] == second["s_ids"]  # one S, known on every rank alike
    s = set(first["s_ids"][-1])
    assert s, "the warm-up must end within the job"
    after = [e for e in range(EPOCHS + 1) if first["evaluated"][e] or second["evaluated"][e]]
    assert after, "S must be re-evaluated after the warm-up"
    full = 0
    for epoch in after:
        a, b = set(first["evaluated"][epoch]), set(second["evaluated"][epoch])
        assert not a & b, f"epoch {epoch}: both ranks re-evaluated {sorted(a & b)[:5]}"
        assert a | b <= s
        assert a <= set(sorted(s)[0::2]) and b <= set(sorted(s)[1::2])  # sorted(S)[rank::world]
        full += a | b == s
    assert full >= 2, "once the buffers are filled, the parts together are all of S"
    # each part came from its rank's static buffer in the node's shared cache: no rank
    # evicted what another buffers
    assert first["evaluate_reads"] == second["evaluate_reads"] == 0
    # every rank's table holds every part's re-scored losses, and the tables agree
    assert first["losses"] == second["losses"]
    last = sorted(set(first["evaluated"][EPOCHS]) | set(second["evaluated"][EPOCHS]))
    assert last == sorted(s)
    want = np.round(eval_loss(np.asarray(last), EPOCHS), 12)
    assert [first["losses"][i] for i in last] == want.tolist()
    # one global order, split between the ranks (strided, padded by wrapping to its start)
    for epoch in range(EPOCHS):
        a, b = first["requested"][epoch], second["requested"][epoch]
        assert len(a) == len(b), f"epoch {epoch}"
        merged = [i for pair in zip(a, b, strict=True) for i in pair]
        if len(set(merged)) < len(merged):  # an odd order: one id read twice
            assert merged[-1] == merged[0] and len(set(merged[:-1])) == len(merged) - 1
