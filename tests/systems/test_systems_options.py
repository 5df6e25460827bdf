"""A system option's declaration: its type in words, text read in that type, values checked."""

from __future__ import annotations

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.systems.options import SystemOption, declare, format_value, parse_loose


def test_types_read_in_words() -> None:
    assert SystemOption("a", "number", 0.0, "m").type_name == "number"
    assert SystemOption("a", "int|none", None, "m").type_name == "int or none"
    assert SystemOption("a", "blocks|head|none", None, "m").type_name == "'blocks', 'head' or none"


def test_text_is_read_in_the_option_type() -> None:
    flag = SystemOption("unbiased", "bool", False, "m")
    assert [flag.parse("s", t) for t in ("true", "Yes", "on", "false", "NO", "off")] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    share = SystemOption("coverage_floor", "number", 0.0, "m")
    assert share.parse("s", "0.05") == 0.05 and share.parse("s", "3") == 3
    epoch = SystemOption("anneal_from", "int|none", None, "m")
    assert epoch.parse("s", "none") is None and epoch.parse("s", " 7 ") == 7
    with pytest.raises(HotsetError, match=r"option anneal_from got '7\.5', expected int or none"):
        epoch.parse("s", "7.5")
    with pytest.raises(HotsetError, match="option unbiased got '1', expected bool"):
        flag.parse("s", "1")  # 1 is not a spelling of true: say which words are


def test_python_values_are_checked_by_type_and_numpy_scalars_made_plain() -> None:
    probe = SystemOption("probe", "int", 0, "m")
    value = probe.check("quiver", np.int64(4))
    assert value == 4 and type(value) is int
    for bad in (True, 2.0, "4", None):
        with pytest.raises(HotsetError, match=r"option probe got .*, expected int"):
            probe.check("quiver", bad)
    share = SystemOption("s", "number", 0.0, "m")
    assert share.check("x", 1) == 1 and share.check("x", np.float32(0.5)) == 0.5
    with pytest.raises(HotsetError, match="expected number"):
        share.check("x", False)


def test_declarations_must_match_the_defaults_the_build_uses() -> None:
    with pytest.raises(TypeError, match="do not match the defaults"):
        declare({"a": 1, "b": 2}, {"a": ("int", "the a")})
    (only,) = declare({"a": 1}, {"a": ("int", "the\n   a")})
    assert only == SystemOption("a", "int", 1, "the a")


def test_values_print_as_a_spec_spells_them() -> None:
    for value in (None, True, False, 3, 0.05, 30.0, "head"):
        assert parse_loose(format_value(value)) == value
