"""``hotset.options``: a dataclass field declared once, parsed and checked alike from
Python and from text."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotset import options
from hotset.errors import HotsetError
from hotset.options import cli, cli_fields, from_texts, shown


@dataclass(frozen=True)
class _Toy:
    seeds: tuple[int, ...] = field(default=(0, 1), metadata=cli("Seeds.", parse=options.ints))
    fracs: tuple[float, ...] = field(default=(0.05, 0.2), metadata=cli(parse=options.floats))
    epochs: int = field(default=3, metadata=cli(flag="--rounds"))
    hidden: int = 7

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise HotsetError(f"--rounds: must be >= 1, got {self.epochs}")


def test_only_fields_with_metadata_are_on_the_command_line_in_declared_order() -> None:
    names = [(f.name, spec.option_name(f.name)) for f, spec in cli_fields(_Toy)]
    assert names == [("seeds", "--seeds"), ("fracs", "--fracs"), ("epochs", "--rounds")]


def test_text_is_parsed_and_the_dataclass_checks_itself() -> None:
    opts = from_texts(_Toy, {"seeds": "3, 4,5", "fracs": "0.1", "epochs": 2})
    assert opts == _Toy(seeds=(3, 4, 5), fracs=(0.1,), epochs=2)
    with pytest.raises(HotsetError, match="--rounds: must be >= 1, got 0"):
        from_texts(_Toy, {"seeds": "1", "fracs": "0.1", "epochs": 0})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1,,2", "--seeds: expected a comma-separated list, got '1,,2'"),
        ("1,x", "--seeds: expected a comma-separated list of integers, got '1,x'"),
        ("", "--seeds: expected a comma-separated list"),
    ],
)
def test_a_bad_list_names_the_option_and_the_text(text: str, message: str) -> None:
    with pytest.raises(HotsetError, match=message.replace("(", r"\(")):
        from_texts(_Toy, {"seeds": text, "fracs": "0.1", "epochs": 1})


def test_systems_keep_commas_inside_brackets() -> None:
    assert options.systems("lru, shade[unbiased=true,coverage_floor=0.2]", "--systems") == (
        "lru",
        "shade[unbiased=true,coverage_floor=0.2]",
    )
    with pytest.raises(HotsetError, match="--systems: expected at least one system"):
        options.systems(" ", "--systems")


def test_a_class_that_is_no_dataclass_is_refused() -> None:
    with pytest.raises(TypeError, match="is not a dataclass"):
        cli_fields(int)


@given(st.lists(st.integers(-(10**9), 10**9), min_size=1, max_size=20))
def test_a_default_shown_as_text_parses_back_to_itself(values: list[int]) -> None:
    assert options.ints(shown(tuple(values)), "--x") == tuple(values)


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1))
def test_floats_shown_parse_back_close(values: list[float]) -> None:
    back = options.floats(shown(tuple(values)), "--x")
    assert back == pytest.approx(tuple(values), rel=1e-5, abs=1e-30)


def test_an_empty_systems_list_is_the_suites_default() -> None:
    parse = options.systems_or(("lru", "shade"))
    assert parse("", "--systems") == ("lru", "shade")
    assert parse("minio,shade[unbiased=true]", "--systems") == ("minio", "shade[unbiased=true]")
