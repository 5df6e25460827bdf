"""Scout: the sampler's order kept, misses fetched in chunk-ranged requests, no wasted bytes.

Real parts: a packed data set of PNG files on disk, the real loader with DataLoader
worker processes, a real redis-server on loopback (tests/redis_support.py).
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest

import hotset
from hotset.data.chunks import ChunkLayout
from hotset.engine.outcome import Outcome
from hotset.engine.planner import Planner
from hotset.errors import HotsetError, IntegrityError
from hotset.policies.base import Budget
from hotset.systems.registry import build_system
from layout_support import make_layout
from packed_support import packed_synth

N, CHUNK, BATCH = 400, 16, 16


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("scout") / "ds", n=N, seed=5, chunk_size=CHUNK, shuffle_seed=2
    )


def _losses(ids: object, epoch: int) -> np.ndarray:
    arr = np.asarray(ids, dtype=np.int64)
    return ((arr * 2654435761 + epoch * 40503) % 1000) / 1000.0 + 0.1


def _run_loader(data: hotset.Dataset, epochs: int, **kw: object) -> tuple[list, list]:  # type: ignore[type-arg]
    rows, served = [], []
    with hotset.loader(
        data, system="scout", batch_size=BATCH, num_workers=2, seed=1, **kw
    ) as loader:
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            got: list[int] = []
            for _x, _y, ids, _w in loader:
                loader.update(ids, _losses(ids.numpy(), epoch))
                got += ids.tolist()
            served.append(got)
            rows.append(loader.report()[-1])
            assert got == loader.decisions().requested  # the sampler's order, as planned
    return rows, served


def test_the_loader_reads_only_the_bytes_it_trains_in_few_requests(packed: Path) -> None:
    data = hotset.open_dataset(packed, decode="bytes")
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    rows, served = _run_loader(data, 3, cache="20%")
    for row, got in zip(rows, served, strict=True):
        trained = int(sizes[got].sum())
        assert row["storage_bytes"] <= 1.2 * trained
        assert row["storage_requests"] <= len(got) / 4  # chunks of 16: many members a request
        assert row["substitutions"] == 0 and row["integrity_errors"] == 0
        assert row["unique_ids_trained"] == len(set(got))


def test_scout_in_a_shared_redis_cache(packed: Path, redis_url: str) -> None:
    data = hotset.open_dataset(packed, decode="bytes")
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    budget = int(0.2 * sizes.sum())
    rows, served = _run_loader(data, 2, cache=redis_url, cache_bytes=budget)
    for row, got in zip(rows, served, strict=True):
        assert row["storage_bytes"] <= 1.2 * int(sizes[got].sum())
        assert row["fetched_ahead"] > len(got) / 2  # fetched-ahead members served from redis
        assert row["cache_errors"] == 0


def test_delivered_bytes_are_the_files_bytes(packed: Path) -> None:
    data = hotset.open_dataset(packed, decode="bytes")
    with hotset.loader(
        data, system="scout", cache="20%", batch_size=BATCH, num_workers=2, seed=2
    ) as loader:
        loader.set_epoch(0)
        for x, _y, ids, _w in loader:
            for blob, sid in zip(x, ids.tolist(), strict=True):
                want = (packed / data.manifest.keys[sid]).read_bytes()
                assert blob == want


def _tampered(packed: Path, tmp_path: Path) -> tuple[Path, int]:
    """A copy of the data set with one byte of one chunk member flipped; (copy, its id)."""
    import shutil

    copy = tmp_path / "ds"
    shutil.copytree(packed, copy)
    layout = ChunkLayout.load(copy)
    sid = int(layout.members(0)[3])
    path = copy / layout.chunk_keys[0]
    raw = bytearray(path.read_bytes())
    raw[int(layout.offset[sid]) + 5] ^= 0xFF
    path.write_bytes(bytes(raw))
    return copy, sid


def test_skip_mode_never_delivers_the_changed_bytes(packed: Path, tmp_path: Path) -> None:
    """The changed member fails its ranged read: where it was the miss itself it is
    skipped; where it was fetched ahead, its turn finds it missing from the cache and
    reads its own (intact) sample file. Either way no wrong byte is delivered."""
    copy, sid = _tampered(packed, tmp_path)
    data = hotset.open_dataset(copy, decode="bytes")
    with hotset.loader(
        data,
        system="scout",
        cache="20%",
        batch_size=BATCH,
        num_workers=2,
        seed=1,
        on_error="skip",
    ) as loader:
        loader.set_epoch(0)
        got = {}
        for x, _y, ids, _w in loader:
            got.update(zip(ids.tolist(), x, strict=True))
        row = loader.report()[-1]
    assert set(got) | {sid} == set(range(N))  # epoch 0 is a full epoch
    for i, blob in got.items():
        assert blob == (copy / data.manifest.keys[i]).read_bytes()
    assert row["skipped"] == (0 if sid in got else 1)
    assert row["skipped"] + row["rebuild_reads"] >= 1  # the bad member was noticed


def test_a_chunk_member_that_changed_stops_training_naming_it(packed: Path, tmp_path: Path) -> None:
    copy, sid = _tampered(packed, tmp_path)
    data = hotset.open_dataset(copy, decode="bytes")
    loader = hotset.loader(
        data, system="scout", cache="20%", batch_size=BATCH, num_workers=0, seed=1
    )
    with loader, pytest.raises(IntegrityError, match=rf"id {sid}\b"):
        loader.set_epoch(0)
        for _ in loader:
            pass


def _planner(spec: str, *, seed: int = 0) -> tuple[Planner, np.ndarray]:
    sizes = np.random.default_rng(seed).integers(100, 300, 1024).astype(np.int64)
    system = build_system(
        spec,
        n=len(sizes),
        budget=Budget(capacity_bytes=int(0.2 * sizes.sum()), sizes=sizes),
        seed=seed,
        batch_size=32,
        layout=make_layout(sizes, 64, seed=3),
    )
    return Planner(system, n=len(sizes), batch_size=32, lag=0), sizes


def test_a_partial_unit_read_is_one_request_moving_only_its_members() -> None:
    # preview off: a previewed id is read this epoch for the next one's head (its own test)
    planner, sizes = _planner("scout[serve=order,preview=0]")
    planner.begin(0)
    grouped = 0
    reads_per_epoch: collections.Counter[int] = collections.Counter()
    for plan in planner.plans():
        layout = planner.system.policy.layout
        assert layout is not None
        for u, ids in plan.read_groups.items():
            assert (np.asarray(layout.chunk_of)[ids] == u).all()
        grouped += len(plan.read_groups)
        assert plan.storage_requests == len(plan.reads) - plan.grouped + len(plan.read_groups)
        assert plan.storage_bytes == int(sizes[plan.reads].sum())  # only the members' bytes
        assert not (plan.outcomes == Outcome.SUBSTITUTION).any()
        assert (plan.served == plan.requested).all()
        reads_per_epoch.update(plan.reads.tolist())
        planner.give(plan.index, plan.served, _losses(plan.served, 0))
    planner.finish(val_accuracy=None)
    assert grouped > 0
    # a member fetched ahead is never evicted before its turn: nothing is read twice
    assert max(reads_per_epoch.values()) == 1
    assert sum(reads_per_epoch.values()) == len(planner.order)


def test_ablations_change_only_what_they_name() -> None:
    # preview off in all three: epoch 0 then reads each id once (preview has its own test)
    whole, sizes = _planner("scout[serve=order,ranged=false,preview=0]")
    alone, _ = _planner("scout[serve=order,lookahead=0,preview=0]")
    ranged, _ = _planner("scout[serve=order,preview=0]")
    for p in (whole, alone, ranged):
        p.begin(0)
    got = {}
    for name, p in (("whole", whole), ("alone", alone), ("ranged", ranged)):
        plans = list(p.plans())
        got[name] = (
            sum(x.storage_requests for x in plans),
            sum(x.storage_bytes for x in plans),
            np.concatenate([x.served for x in plans]),
        )
    assert (got["whole"][2] == got["ranged"][2]).all() and (
        got["alone"][2] == got["ranged"][2]
    ).all()
    assert got["alone"][0] == len(got["alone"][2])  # every miss its own request
    assert got["ranged"][0] < got["alone"][0] / 8
    assert got["whole"][0] == got["ranged"][0]  # the same requests...
    assert got["whole"][1] > 3 * got["ranged"][1]  # ...moving whole chunks
    assert got["ranged"][1] == int(sizes.sum())  # epoch 0: every byte once


def test_every_id_is_trained_at_least_once_every_k_epochs() -> None:
    planner, _ = _planner("scout[warm_up=1,reuse_factor=100,coverage_epochs=3,beta=4,window=64]")
    trained_in: list[set[int]] = []
    for epoch in range(7):
        planner.begin(epoch)
        seen: set[int] = set()
        for plan in planner.plans():
            seen.update(plan.served.tolist())
            planner.give(plan.index, plan.served, _losses(plan.served, epoch))
        planner.finish(val_accuracy=None)
        trained_in.append(seen)
    assert min(len(s) for s in trained_in[1:]) < 1024  # the selection skips some ids
    for start in range(len(trained_in) - 2):
        window = set().union(*trained_in[start : start + 3])
        assert len(window) == 1024


def test_each_rank_is_served_its_own_shard_in_order() -> None:
    a, _ = _planner("scout", seed=4)
    b, _ = _planner("scout", seed=4)
    a.begin(0, rank=0, world_size=2)
    b.begin(0, rank=1, world_size=2)
    sa = np.concatenate([p.served for p in a.plans()])
    sb = np.concatenate([p.served for p in b.plans()])
    assert (sa == a.order).all() and (sb == b.order).all()
    assert not set(sa.tolist()) & set(sb.tolist())
    assert len(sa) + len(sb) == 1024


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("scout[lookahead=-1]", "lookahead must be >= 0, got -1"),
        ("scout[sampler=loss]", "sampler"),
        ("scout[ranged=maybe]", "ranged"),
        ("scout[stagger=2]", "stagger"),
        ("scout[horizon=3]", "has no option 'horizon'"),
        ("scout[coverage_epochs=-2]", "coverage_epochs"),
        ("scout[preview=far]", "preview got 'far', expected int or 'horizon'"),
        ("scout[preview=-1]", "preview must be 'horizon' or an integer >= 0, got -1"),
        ("scout[ramp=0]", r"ramp must be a number in \(0, 1\], got 0"),
        ("scout[ramp=1.5]", "ramp must be a number in"),
        ("scout[serve=set]", "option serve got 'set', expected 'rounds' or 'order'"),
        ("scout[lanes=0]", "lanes must be an integer >= 1, got 0"),
        ("scout[lookahead=1.5]", "lookahead=1.5 applies to serve=order, not serve=rounds"),
        ("scout[serve=order,lanes=8]", "lanes=8 applies to serve=rounds, not serve=order"),
    ],
)
def test_bad_options_are_named(spec: str, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        _planner(spec)


def test_scout_needs_a_chunk_layout() -> None:
    with pytest.raises(HotsetError, match="hotset data pack"):
        build_system(
            "scout", n=8, budget=Budget(capacity_items=2), seed=0, batch_size=2, layout=None
        )


def _io_per_batch(spec: str, epochs: int) -> list[list[tuple[int, int]]]:
    """Per epoch, per batch: (storage requests, storage bytes)."""
    planner, _ = _planner(spec)
    out = []
    for epoch in range(epochs):
        planner.begin(epoch)
        io = []
        for plan in planner.plans():
            io.append((plan.storage_requests, plan.storage_bytes))
            planner.give(plan.index, plan.served, _losses(plan.served, epoch))
        planner.finish(val_accuracy=None)
        out.append(io)
    return out


def _requests_per_batch(spec: str, epochs: int) -> list[list[int]]:
    return [[r for r, _ in epoch] for epoch in _io_per_batch(spec, epochs)]


def test_a_cold_cache_grows_its_horizon_over_the_first_epoch() -> None:
    """ramp: the first batch reads a share of the fetched-ahead stock it would read at
    the full horizon (it has a request for nearly every chunk either way), for some
    more requests in the first epoch only."""
    full = _io_per_batch("scout[serve=order,ramp=1]", 3)
    ramped = _io_per_batch("scout[serve=order,ramp=0.3]", 3)
    assert full[0][0][0] == ramped[0][0][0]  # the same requests in the first batch...
    assert ramped[0][0][1] < 0.5 * full[0][0][1]  # ...moving less than half the bytes
    assert sum(r for r, _ in ramped[0]) > sum(r for r, _ in full[0])
    # a warm epoch is not ramped: it makes about the requests the full horizon makes
    for epoch in (1, 2):
        later_full = sum(r for r, _ in full[epoch])
        assert abs(sum(r for r, _ in ramped[epoch]) - later_full) <= 0.15 * later_full


def test_a_horizon_preview_carries_every_window_across_the_epoch_boundary() -> None:
    """preview=horizon (the default): each chunk's window goes on into the next epoch,
    so a later epoch never starts with a request per chunk at once, and it makes fewer
    requests than with no preview (whose every epoch restarts every window)."""
    chunks = 16  # 1,024 ids in chunks of 64
    assert _requests_per_batch("scout[serve=order]", 2) == _requests_per_batch(
        "scout[serve=order,preview=horizon]", 2
    )
    on = _requests_per_batch("scout[serve=order,ramp=1]", 3)  # both with the first epoch not ramped
    off = _requests_per_batch("scout[serve=order,preview=0,ramp=1]", 3)
    for epoch in (1, 2):
        assert max(off[epoch]) >= chunks - 2  # every chunk at the epoch's first miss
        assert max(on[epoch]) <= chunks // 2
        assert sum(on[epoch]) < sum(off[epoch])


@pytest.mark.parametrize("preview", ["4", "horizon"])
def test_preview_starts_the_next_epoch_from_the_cache_and_resumes_exactly(preview: str) -> None:
    """preview: the epoch's last windows fetch the next permutation's first batches, so
    the next epoch's first batches are hits; decisions stay a function of the state
    (the chunks whose windows go on across the boundary are part of it)."""
    from hotset.torch.loader import load_system_state, system_state

    def run(planner: Planner, epochs: range) -> list[tuple[int, ...]]:
        out = []
        for epoch in epochs:
            planner.begin(epoch)
            for plan in planner.plans():
                out.append((plan.storage_requests, *plan.served.tolist()))
                planner.give(plan.index, plan.served, _losses(plan.served, epoch))
            planner.finish(val_accuracy=None)
        return out

    plain, _ = _planner("scout[serve=order,preview=0]")
    ahead, _ = _planner(f"scout[serve=order,preview={preview}]")
    a, b = run(plain, range(2)), run(ahead, range(2))
    per_epoch = len(a) // 2
    first = slice(per_epoch, per_epoch + 4)  # epoch 1's first 4 batches
    assert [r[1:] for r in a] == [r[1:] for r in b]  # the same order, served as drawn
    assert sum(r[0] for r in b[first]) * 3 < sum(r[0] for r in a[first])
    # resume at the epoch boundary: the previewed members are part of the saved state
    again, _ = _planner(f"scout[serve=order,preview={preview}]")
    run(again, range(1))

    def plain_json(value: object) -> object:
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.integer | np.floating | np.bool_):
            return value.item()
        raise TypeError(type(value).__name__)

    state = json.loads(json.dumps(system_state(again.system), default=plain_json))
    fresh, _ = _planner(f"scout[serve=order,preview={preview}]")
    load_system_state(fresh.system, state)
    assert run(fresh, range(1, 3)) == run(again, range(1, 3))
