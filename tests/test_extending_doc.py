"""docs/extending.md's worked example runs as written: the ``mru`` system it builds is
registered, driven through the loader's planner, and delivers each sample once per epoch.

The two Python blocks under the example's heading are taken from the page: the first
is executed as a module of its own (it registers itself), the second as the code that
uses it. The registries are restored afterwards, so no other test sees ``mru``.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"
HEADING = "### A worked example: the `mru` system"
MODULE = "hotset_docs_extending_mru"


def example_blocks(page: Path = PAGE) -> list[str]:
    """The ```python blocks of the worked example's section, in page order."""
    text = page.read_text(encoding="utf-8")
    assert HEADING in text, f"{page.name} lost its heading {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)


@pytest.fixture
def mru_module() -> Iterator[types.ModuleType]:
    """The page's system module, imported under :data:`MODULE`; registries restored after."""
    from hotset.policies import registry as policies
    from hotset.systems import registry as systems

    modules, known = systems.MODULES.snapshot(), policies.POLICIES.snapshot()
    module = types.ModuleType(MODULE)
    sys.modules[MODULE] = module
    try:
        exec(compile(example_blocks()[0], f"{PAGE}[system]", "exec"), module.__dict__)
        yield module
    finally:
        systems.MODULES.restore(modules)
        policies.POLICIES.restore(known)
        del sys.modules[MODULE]


def test_the_page_has_the_system_and_its_use() -> None:
    blocks = example_blocks()
    assert len(blocks) == 2, f"expected the system module and its use, got {len(blocks)} blocks"
    assert "SPECS" in blocks[0] and "register_module(__name__)" in blocks[0]


def test_the_worked_example_registers_and_delivers_each_sample_once_per_epoch(
    mru_module: types.ModuleType,
) -> None:
    from hotset.policies.registry import policy_names
    from hotset.sim.delivered import delivered_orders
    from hotset.systems.registry import system_names

    assert "mru" in system_names() and "mru" in policy_names()
    exec(compile(example_blocks()[1], f"{PAGE}[use]", "exec"), {})  # the page's own asserts

    sizes = np.full(60, 500, dtype=np.int64)
    orders = delivered_orders("mru", sizes=sizes, cache_frac=0.3, epochs=4, batch_size=8, seed=3)
    assert len(orders) == 4
    for order in orders:
        assert sorted(order.tolist()) == list(range(60))
    assert (orders[0] != orders[1]).any()  # a fresh permutation per epoch


def test_the_example_policy_keeps_its_budget_and_evicts_the_most_recent(
    mru_module: types.ModuleType,
) -> None:
    from hotset.engine.budget import Budget
    from hotset.engine.outcome import Outcome
    from hotset.policies.registry import make_policy

    policy = make_policy("mru", Budget(capacity_items=2))
    assert isinstance(policy, mru_module.MRU)
    assert [policy.access(s).outcome for s in (0, 1, 0)] == [
        Outcome.MISS,
        Outcome.MISS,
        Outcome.HIT,
    ]
    third = policy.access(2)  # full: evicts 0, the most recently used
    assert third.admitted and third.evicted == (0,)
    assert policy.resident() == {1, 2} and policy.used_items == 2
