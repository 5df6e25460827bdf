"""delivered_orders is the order the real loader delivers (real files, real workers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hotset
from hotset.errors import HotsetError
from hotset.sim.delivered import delivered_orders
from packed_support import packed_synth


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(tmp_path_factory.mktemp("delivered") / "ds", n=160, seed=3, chunk_size=8)


@pytest.mark.parametrize(("system", "workers"), [("brand", 2), ("quiver", 0), ("pytorch", 0)])
def test_the_loader_delivers_the_planned_order(packed: Path, system: str, workers: int) -> None:
    data = hotset.open_dataset(packed, decode="bytes")
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    want = delivered_orders(
        system, sizes=sizes, cache_frac=0.2, epochs=3, layout=data.layout, seed=4, batch_size=8
    )
    cache = int(0.2 * int(sizes.sum()))
    got = []
    with hotset.loader(
        data, system=system, cache=cache, batch_size=8, num_workers=workers, seed=4
    ) as loader:
        for epoch in range(3):
            loader.set_epoch(epoch)
            got.append(np.concatenate([ids.numpy() for _x, _y, ids, _w in loader]))
    for epoch, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.tolist() == w.tolist(), f"{system}, epoch {epoch}"
    if system != "pytorch":  # the system really reordered: not the sampler's order
        plain = delivered_orders("pytorch", sizes=sizes, cache_frac=0.2, epochs=1, seed=4)
        assert want[0].tolist() != plain[0].tolist()


def test_ranks_run_in_lockstep_and_every_id_is_delivered_once(packed: Path) -> None:
    data = hotset.open_dataset(packed, decode="bytes")
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    orders = delivered_orders(
        "brand", sizes=sizes, cache_frac=0.2, epochs=2, layout=data.layout, world_size=2,
        batch_size=8,
    )  # fmt: skip
    assert all(sorted(o.tolist()) == list(range(160)) for o in orders)
    plain = delivered_orders(
        "pytorch", sizes=sizes, cache_frac=0.2, epochs=1, world_size=2, batch_size=8
    )
    shards = [planned_shard(sizes, r) for r in range(2)]
    assert plain[0][:8].tolist() == shards[0][:8] and plain[0][8:16].tolist() == shards[1][:8]


def planned_shard(sizes: np.ndarray, rank: int) -> list[int]:
    """Rank ``rank``'s planned order of epoch 0 (the sampler's shard, seed 0)."""
    from hotset.engine.budget import Budget
    from hotset.systems.registry import build_system

    system = build_system("pytorch", n=len(sizes), budget=Budget(capacity_bytes=1), seed=0)
    return [int(i) for i in system.begin_epoch(0, rank=rank, world_size=2)]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"cache_frac": 0.0}, "cache_frac: must be in \\(0, 1\\], got 0.0"),
        ({"epochs": 0}, "epochs: must be an integer >= 1, got 0"),
        ({"world_size": 0}, "world_size: must be an integer >= 1, got 0"),
        ({"batch_size": True}, "batch_size: must be an integer >= 1, got True"),
    ],
)
def test_bad_values_are_named(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {"cache_frac": 0.2, "epochs": 1} | kwargs
    with pytest.raises(HotsetError, match=match):
        delivered_orders("pytorch", sizes=np.full(10, 5), **args)  # type: ignore[arg-type]
