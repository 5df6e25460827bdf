"""Quiver through the real loader: byte-exact samples, each once per epoch, with workers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from torch_support import epoch_once_byte_exact

import hotset
from hotset.data import SynthConfig, make_synth
from hotset.policies.base import Outcome
from packed_support import packed_synth


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quiverds") / "ds"
    make_synth(path, SynthConfig(n=160, image_size=8, classes=4, seed=6), workers=1)
    return path


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("quiverpk") / "ds", n=160, seed=6, chunk_size=8, shuffle_seed=1
    )


@pytest.mark.parametrize(("seed", "frac"), [(2, 0.2), (7, 0.05), (11, 0.5)])
@pytest.mark.parametrize("layout", ["plain", "packed"])
@pytest.mark.parametrize("workers", [0, 2, 4])
def test_quiver_trains_every_sample_once_per_epoch_byte_exact(
    request: pytest.FixtureRequest, layout: str, workers: int, seed: int, frac: float
) -> None:
    """Seeds x cache sizes x layouts x real DataLoader workers: 0 violations."""
    data = hotset.open_dataset(request.getfixturevalue(layout), decode="bytes")
    n = len(data.manifest)
    truth = [data[i][0] for i in range(n)]
    cache = int(frac * int(np.sum(data.manifest.sizes)))
    with hotset.loader(
        data, system="quiver", cache=cache, batch_size=8, num_workers=workers, seed=seed
    ) as loader:
        for epoch in range(3):
            epoch_once_byte_exact(loader, epoch, truth)
        report = loader.report()
        rows = loader.decisions().rows()
        moved = loader.policy_summary()
    kinds = {int(row[1]) for row in rows}
    assert int(Outcome.SUBSTITUTION) in kinds
    last = report[-1]
    served_from_cache = last["exact_hits"] + last["substitutions"]
    assert served_from_cache > (0.8 if frac >= 0.2 else 0.5) * n
    assert last["unique_ids_trained"] == n
    # substitutions change the order: samples moved, by at most an epoch's length
    assert 0 < moved["displacement_mean"] <= moved["displacement_max"] < n
