"""``hotset.registry.Registry``: the one shape of every registry a plug-in adds to."""

from __future__ import annotations

import pytest

from hotset.errors import HotsetError
from hotset.registry import Registry


def _double(x: int) -> int:
    return 2 * x


def _triple(x: int) -> int:
    return 3 * x


def test_text_entries_are_imported_at_first_use_and_checked() -> None:
    reg: Registry[object] = Registry("codec", check=callable)
    reg.register("dumps", "json:dumps")
    reg.register("json", "json")  # a module
    assert reg.get("dumps")([1]) == "[1]"
    assert reg.target("dumps") == "json:dumps"
    reg.register("pi", "math:pi")
    with pytest.raises(
        HotsetError, match="codec 'pi' is registered as math:pi, which is not a codec"
    ):
        reg.get("pi")
    strict: Registry[object] = Registry("module")
    assert strict.names() == [] and "json" not in strict


def test_the_same_entry_again_is_a_no_op_and_another_needs_replace() -> None:
    reg: Registry[object] = Registry("scheme")
    reg.register("x", _double)
    reg.register("x", _double)
    with pytest.raises(
        HotsetError,
        match=r"scheme 'x' is already registered as .*_double; pass replace=True to register .*_triple",
    ):
        reg.register("x", _triple)
    assert reg.get("x") is _double
    with pytest.raises(HotsetError, match="replace must be True or False, got 'yes'"):
        reg.register("x", _triple, replace="yes")  # type: ignore[arg-type]
    reg.register("x", _triple, replace=True)
    assert reg.get("x") is _triple and reg.names() == ["x"]


def test_an_unknown_name_lists_the_known_and_the_nearest() -> None:
    reg: Registry[object] = Registry("policy")
    for name in ("lru", "lfu", "fifo"):
        reg.register(name, _double)
    with pytest.raises(
        HotsetError,
        match=r"unknown policy 'lrv' \(did you mean 'lru'\?\); choose from fifo, lfu, lru",
    ):
        reg.get("lrv")
    with pytest.raises(HotsetError, match="non-empty string"):
        reg.register("", _double)


def test_snapshot_and_restore_undo_a_plug_in() -> None:
    reg: Registry[object] = Registry("system module")
    reg.register("a", _double)
    before = reg.snapshot()
    reg.register("b", _triple)
    reg.unregister("a")
    assert reg.names() == ["b"]
    reg.restore(before)
    assert reg.names() == ["a"] and reg.get("a") is _double
    with pytest.raises(HotsetError, match="unknown system module 'b'"):
        reg.unregister("b")
