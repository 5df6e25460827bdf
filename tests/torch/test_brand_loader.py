"""Brand through the real loader: byte-exact samples, each delivered once per epoch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from torch_support import epoch_once_byte_exact

import hotset
from hotset.policies.base import Outcome
from packed_support import packed_synth


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 small PNGs packed 8 per chunk in a seeded shuffle (Brand's chunk generation)."""
    return packed_synth(
        tmp_path_factory.mktemp("brandds") / "ds", n=120, seed=5, chunk_size=8, shuffle_seed=2
    )


@pytest.mark.parametrize("workers", [0, 2])
def test_brand_delivers_every_sample_once_per_epoch_byte_exact(packed: Path, workers: int) -> None:
    data = hotset.open_dataset(packed, decode="bytes")
    n = len(data.manifest)
    truth = [data[i][0] for i in range(n)]  # read alone, straight from the store
    cache = int(0.2 * int(np.sum(data.manifest.sizes)))
    kinds: set[int] = set()
    with hotset.loader(
        data, system="brand", cache=cache, batch_size=8, num_workers=workers, seed=4
    ) as loader:
        for epoch in range(2):
            epoch_once_byte_exact(loader, epoch, truth)
            kinds |= {int(row[1]) for row in loader.decisions().rows()}
    # the loader really went through Brand's protocol: chunk misses and substitutions
    assert {int(Outcome.MISS), int(Outcome.SUBSTITUTION)} <= kinds


def test_brand_across_ranks_asks_for_one_shared_cache(packed: Path) -> None:
    """Its ranks fill one memory for the job: a cache per rank would lose what others put."""
    data = hotset.open_dataset(packed, decode="bytes")
    with pytest.raises(hotset.HotsetError, match="same shared cache"):
        hotset.loader(data, system="brand", cache="20%", batch_size=8, rank=0, world_size=2)
