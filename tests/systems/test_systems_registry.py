"""The system registry: names, lookup, building, and the errors users see."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.policies.base import Budget
from hotset.samplers.base import EpochContext
from hotset.systems import registry
from hotset.systems.base import System, SystemSpec
from hotset.systems.registry import build_system, get_spec, register_module, system_names

BASELINES = ["pytorch", "lru", "fifo", "lfu", "minio", "belady", "oracle"]


def _budget(n: int) -> Budget:
    return Budget(capacity_bytes=n * 10, sizes=np.full(n, 100, dtype=np.int64))


def test_baselines_come_first_in_their_declared_order() -> None:
    assert system_names()[: len(BASELINES)] == BASELINES


def test_names_are_unique_and_specs_are_documented() -> None:
    names = system_names()
    assert len(names) == len(set(names))
    for name in names:
        spec = get_spec(name)
        assert spec.name == name
        assert spec.summary.strip() and "\n" not in spec.summary
        assert spec.source.strip()


@pytest.mark.parametrize("name", system_names())
def test_every_spec_builds_a_working_system(name: str) -> None:
    from hotset.systems.registry import capabilities_of
    from layout_support import make_layout

    n = 40
    layout = None
    if capabilities_of(name).reads_units:  # a system that reads whole chunks needs chunks
        layout = make_layout(np.full(n, 100, dtype=np.int64), 8)
    system = build_system(name, n=n, budget=_budget(n), seed=3, batch_size=8, layout=layout)
    assert isinstance(system, System)
    assert system.name == name
    if system.policy.capabilities.needs_future:
        future = [system.sampler.order(EpochContext(epoch=e)) for e in range(2)]
        system.policy.set_future(np.concatenate(future))
    for epoch in range(2):
        order = system.begin_epoch(epoch)
        assert len(order) > 0
        assert ((order >= 0) & (order < n)).all()
        for start in range(0, len(order), 8):
            batch = order[start : start + 8]
            served = np.array([system.access(int(s)).served for s in batch], dtype=np.int64)
            assert ((served >= 0) & (served < n)).all()
            system.feedback(served, np.linspace(0.1, 2.0, len(served)), epoch=epoch)
        system.end_epoch(train_loss=1.0, val_accuracy=0.5)


def test_unknown_name_lists_the_choices() -> None:
    with pytest.raises(
        HotsetError,
        match=r"unknown system 'nope' \(did you mean 'nopfs'\?\); choose from .*pytorch.*lru",
    ):
        get_spec("nope")
    with pytest.raises(HotsetError, match="unknown system 'nope'"):
        build_system("nope", n=10, budget=_budget(10), seed=0)


@pytest.mark.parametrize(("n", "batch_size", "match"), [(0, 8, "n=0"), (10, 0, "batch_size")])
def test_build_rejects_bad_sizes(n: int, batch_size: int, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        build_system("lru", n=n, budget=_budget(10), seed=0, batch_size=batch_size)


def _fake_spec(name: str) -> SystemSpec:
    def build(**kwargs: object) -> System:
        raise AssertionError("not built in this test")

    return SystemSpec(name=name, summary="a test system", source="nowhere", build=build)


@pytest.fixture
def fake_module() -> Iterator[types.ModuleType]:
    """A system module made at run time and registered; removed afterwards."""
    module = types.ModuleType("hotset_test_fake_systems")
    module.SPECS = [_fake_spec("fake_one")]  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    before = registry.MODULES.snapshot()
    try:
        yield module
    finally:
        registry.MODULES.restore(before)
        del sys.modules[module.__name__]


def test_registered_module_adds_its_names(fake_module: types.ModuleType) -> None:
    register_module(fake_module.__name__)
    register_module(fake_module.__name__)  # idempotent
    assert system_names().count("fake_one") == 1
    assert get_spec("fake_one").summary == "a test system"


def test_a_name_defined_twice_is_an_error(fake_module: types.ModuleType) -> None:
    fake_module.SPECS = [_fake_spec("lru")]  # type: ignore[attr-defined]
    register_module(fake_module.__name__)
    with pytest.raises(HotsetError, match="system 'lru' is defined twice"):
        system_names()


def test_a_listed_module_that_does_not_exist_is_an_error() -> None:
    before = registry.MODULES.snapshot()
    try:
        register_module("hotset.systems.not_written_yet")
        with pytest.raises(ModuleNotFoundError, match="not_written_yet"):
            system_names()
    finally:
        registry.MODULES.restore(before)


def test_system_specs_carry_options() -> None:
    from hotset.systems.registry import parse_system, split_systems

    assert parse_system("shade") == ("shade", {})
    assert parse_system("shade[coverage_floor=0.2,anneal_from=13,unbiased=true]") == (
        "shade",
        {"coverage_floor": 0.2, "anneal_from": 13, "unbiased": True},
    )
    assert split_systems("pytorch, shade[a=1,b=2],lru") == ["pytorch", "shade[a=1,b=2]", "lru"]
    with pytest.raises(HotsetError, match="not option=value"):
        parse_system("shade[oops]")
    with pytest.raises(HotsetError, match="unknown system"):
        parse_system("nope[a=1]")
    with pytest.raises(HotsetError, match="NAME\\[option=value"):
        parse_system("shade[a=1")


# -- the one spec grammar: NAME[option=value,...] ---------------------------------------


def test_a_spec_builds_the_system_with_its_options() -> None:
    shade = build_system(
        "shade[coverage_floor=0.05,anneal_from=4]", n=40, budget=_budget(40), seed=0, batch_size=8
    )
    assert shade.name == "shade"
    assert shade.sampler.coverage_floor == 0.05  # type: ignore[attr-defined]
    assert shade.sampler.anneal_from == 4  # type: ignore[attr-defined]
    quiver = build_system("quiver[probe=10]", n=40, budget=_budget(40), seed=0, batch_size=8)
    assert quiver.policy.probe == 10  # type: ignore[attr-defined]
    # the spec's options and keyword ones join; the same option both ways is refused
    both = build_system(
        "quiver[probe=3]", n=40, budget=_budget(40), seed=0, batch_size=8, evict_after_s=5.0
    )
    assert (both.policy.probe, both.policy.evict_after_s) == (3, 5.0)  # type: ignore[attr-defined]
    with pytest.raises(HotsetError, match="option 'probe' of system 'quiver' is given twice"):
        build_system("quiver[probe=3]", n=40, budget=_budget(40), seed=0, probe=4)


def test_a_misspelled_option_is_named_as_an_option_with_the_valid_ones() -> None:
    from hotset.systems.registry import parse_system

    with pytest.raises(HotsetError) as info:
        parse_system("shade[coverage_flor=0.05]")
    message = str(info.value)
    assert "unknown system" not in message
    assert (
        "system 'shade' has no option 'coverage_flor' (did you mean 'coverage_floor'?)" in message
    )
    assert "its options are rep_factor, ls_init_frac, adaptive" in message
    assert "coverage_floor, anneal_from, unbiased, guardrail, guard_threshold" in message
    with pytest.raises(
        HotsetError, match=r"system 'brand' has no option 'windw'.*window, remote_frac"
    ):
        parse_system("brand[windw=8]")
    with pytest.raises(HotsetError, match="system 'lru' takes no options, got probe"):
        parse_system("lru[probe=1]")


def test_an_unknown_system_in_a_spec_lists_the_systems() -> None:
    from hotset.systems.registry import parse_system

    with pytest.raises(
        HotsetError,
        match=r"unknown system 'shadee' \(did you mean 'shade'\?\); choose from pytorch, .*shade",
    ):
        parse_system("shadee[coverage_floor=0.05]")
    with pytest.raises(
        HotsetError, match=r"unknown system 'nope' \(did you mean 'nopfs'\?\); choose from"
    ):
        build_system("nope[a=1]", n=10, budget=_budget(10), seed=0)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("quiver[probe=ten]", "system 'quiver': option probe got 'ten', expected int"),
        ("shade[coverage_floor=lots]", "option coverage_floor got 'lots', expected number"),
        ("shade[adaptive=maybe]", "option adaptive got 'maybe', expected bool"),
        ("shade[anneal_from=2.5]", "option anneal_from got '2.5', expected int or none"),
        (
            "shade[aggressive=tail]",
            "option aggressive got 'tail', expected 'blocks', 'head' or none",
        ),
    ],
)
def test_a_bad_value_names_the_option_the_value_and_the_type(spec: str, message: str) -> None:
    from hotset.systems.registry import parse_system

    with pytest.raises(HotsetError, match=re.escape(message)):
        parse_system(spec)


def test_options_given_apart_are_checked_and_joined() -> None:
    from hotset.systems.registry import resolve_system

    assert resolve_system("shade[coverage_floor=0.05]", {"anneal_from": np.int64(3)}) == (
        "shade",
        {"coverage_floor": 0.05, "anneal_from": 3},
    )
    with pytest.raises(
        HotsetError, match=r"in the spec 'shade\[unbiased=true\]' and in system_options"
    ):
        resolve_system("shade[unbiased=true]", {"unbiased": False})
    with pytest.raises(HotsetError, match="option probe got '10', expected int"):
        resolve_system("quiver", {"probe": "10"})  # a Python value is not re-read as text
    with pytest.raises(HotsetError, match="has no option 'prob'"):
        resolve_system("quiver", {"prob": 10})


def test_a_spec_prints_as_it_parses() -> None:
    from hotset.systems.registry import format_system, parse_system

    for spec in (
        "lru",
        "quiver[probe=10]",
        "shade[coverage_floor=0.05,anneal_from=none,adaptive=false]",
    ):
        assert format_system(*parse_system(spec)) == spec


def test_every_declared_option_is_one_its_build_accepts_with_that_default() -> None:
    """The listing (hotset systems --options) cannot name an option a build refuses."""
    from hotset.systems.registry import capabilities_of, options_of
    from layout_support import make_layout

    n = 40
    layout = make_layout(np.full(n, 100, dtype=np.int64), 8)
    for name in system_names():
        declared = options_of(name)
        assert declared is not None, f"{name} declares no options"
        defaults = {o.name: o.default for o in declared}
        system = build_system(
            name,
            n=n,
            budget=_budget(n),
            seed=0,
            batch_size=8,
            layout=layout if capabilities_of(name).reads_units else None,
            **defaults,
        )
        assert system.name == name
        for option in declared:
            assert option.meaning and "\n" not in option.meaning, (name, option.name)


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        ("scuot", "unknown system 'scuot' (did you mean 'scout'?)"),
        ("Quiver[probe=2]", "unknown system 'Quiver' (did you mean 'quiver'?)"),
        ("quiver[prob=10]", "system 'quiver' has no option 'prob' (did you mean 'probe'?)"),
        ("scout[rangd=false]", "system 'scout' has no option 'rangd' (did you mean 'ranged'?)"),
    ],
)
def test_a_misspelt_system_or_option_gets_a_suggestion(spec: str, hint: str) -> None:
    from hotset.systems.registry import parse_system

    with pytest.raises(HotsetError) as caught:
        parse_system(spec)
    assert hint in str(caught.value)


def test_a_name_nothing_resembles_gets_no_suggestion() -> None:
    from hotset.systems.registry import parse_system

    with pytest.raises(HotsetError) as caught:
        parse_system("xyzzy")
    assert "did you mean" not in str(caught.value)
