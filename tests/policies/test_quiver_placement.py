"""Quiver's benefit-aware placement: greedy by saved GPU time per byte, three options."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.policies.quiver.placement import (
    DataSetSpace,
    ProbeResult,
    place,
    probe_result,
    saved_gpus,
)

SPACES = {
    "imagenet": DataSetSpace(size_bytes=1000, chunk_bytes=100),
    "audio": DataSetSpace(size_bytes=600, chunk_bytes=60),
    "text": DataSetSpace(size_bytes=200, chunk_bytes=20),
}


def test_a_job_that_hides_its_io_gets_no_space() -> None:
    probes = [
        ProbeResult("a", "imagenet", t_miss=0.9, t_hit=0.3),  # I/O bound: 3x
        ProbeResult("b", "audio", t_miss=0.51, t_hit=0.5),  # compute bound: 1.02x
    ]
    got = place(SPACES, probes, budget_bytes=250)
    assert got == {"imagenet": "chunks", "audio": "none", "text": "none"}


def test_two_chunks_before_any_whole_data_set_then_upgrades_while_space_is_left() -> None:
    probes = [
        ProbeResult("a", "imagenet", 2.0, 1.0),
        ProbeResult("b", "audio", 2.0, 1.0),
        ProbeResult("c", "text", 2.0, 1.0),
    ]
    # 200 + 120 + 40 = 360 for chunks everywhere; 160 more makes text whole (200 - 40)
    assert place(SPACES, probes, budget_bytes=520) == {
        "imagenet": "chunks",
        "audio": "chunks",
        "text": "full",
    }
    # one byte short of chunks everywhere: the data set with the least gain per byte waits
    assert place(SPACES, probes, budget_bytes=359) == {
        "imagenet": "none",
        "audio": "chunks",
        "text": "full",
    }
    assert place(SPACES, probes, budget_bytes=10**6) == dict.fromkeys(SPACES, "full")


def test_jobs_on_one_data_set_add_up_and_gpus_count() -> None:
    probes = [
        ProbeResult("a", "audio", 1.5, 1.0),
        ProbeResult("b", "audio", 1.5, 1.0),
        ProbeResult("c", "imagenet", 1.5, 1.0, gpus=8),
    ]
    assert saved_gpus(probes) == {"audio": 1.0, "imagenet": 4.0}
    # room for one data set's chunks: imagenet saves 4/200 per byte, audio 1/120
    assert place(SPACES, probes, budget_bytes=200)["imagenet"] == "chunks"


def test_probe_windows_drop_their_first_batch() -> None:
    times = [5.0, 1.0, 1.0, 1.0, 9.0, 0.25, 0.25, 0.25]
    got = probe_result("a", "d", times, probe=4)
    assert got.t_miss == 1.0 and got.t_hit == 0.25 and got.benefit == 4.0
    with pytest.raises(HotsetError, match="need 8"):
        probe_result("a", "d", times[:7], probe=4)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"budget_bytes": -1}, "budget_bytes"),
        ({"budget_bytes": 10, "min_benefit": 0.5}, "min_benefit"),
    ],
)
def test_bad_input_is_named(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        place(SPACES, [], **kwargs)  # type: ignore[arg-type]
    with pytest.raises(HotsetError, match="t_hit"):
        ProbeResult("a", "d", 1.0, 0.0)
    with pytest.raises(HotsetError, match="no size"):
        place(SPACES, [ProbeResult("a", "nowhere", 2.0, 1.0)], budget_bytes=10)


@settings(max_examples=300, deadline=None)
@given(
    budget=st.integers(0, 3000),
    benefits=st.lists(st.floats(0.5, 10.0), min_size=3, max_size=3),
)
def test_placement_never_exceeds_the_budget(budget: int, benefits: list[float]) -> None:
    probes = [
        ProbeResult(str(i), d, b, 1.0)
        for i, (d, b) in enumerate(zip(SPACES, benefits, strict=True))
    ]
    got = place(SPACES, probes, budget_bytes=budget)
    assert sum(SPACES[d].cost(o) for d, o in got.items()) <= budget
    for d, b in zip(SPACES, benefits, strict=True):
        if b < 1.1:
            assert got[d] == "none"
