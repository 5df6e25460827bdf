"""Command-line lists: bad items are errors that name the option, never silently dropped."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hotset.bench.workloads import parse_floats, parse_ints, parse_list
from hotset.errors import HotsetError


def test_lists_parse() -> None:
    assert parse_list(" a, b ", option="--x") == ["a", "b"]
    assert parse_floats("0.1,0.2", option="--fracs") == [0.1, 0.2]
    assert parse_ints("0, 1,2", option="--seeds") == [0, 1, 2]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: parse_list("a,,b", option="--systems"), "--systems: expected a comma"),
        (lambda: parse_floats("0.5,fast", option="--latency-ms"), "--latency-ms: expected numbers"),
        (lambda: parse_floats("", option="--fracs"), "--fracs: expected a comma"),
        (lambda: parse_ints("1,2.5", option="--seeds"), "--seeds: expected integers"),
    ],
)
def test_bad_items_name_the_option(call: Callable[[], object], message: str) -> None:
    with pytest.raises(HotsetError, match=message):
        call()
