"""No name is registered twice in any of hotset's registries.

A registry maps a name a user types to what it builds: a cache policy
(:mod:`hotset.policies.registry`), a storage URL scheme
(:mod:`hotset.storage.registry`), a module of systems (:mod:`hotset.systems.registry`),
and a system (the ``SPECS`` of those modules). A name written twice is a bug that
hides itself: a dict literal keeps the last value, a ``register_*`` call replaces
the first, and which one a user gets depends on import order.

The same word in two *different* registries is not a duplicate: the system ``lru``
(random order + the ``lru`` policy) and the policy ``lru`` are two things, and the
baselines are named after their policies on purpose.

The sources are read with ast (never imported) for the literal tables and the
``register_*`` calls with a literal name; the systems are listed from their modules.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from hotset.engine.budget import Budget
from hotset.errors import HotsetError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

#: registry -> (the module holding its table, the table's name, the function adding to it)
REGISTRIES: dict[str, tuple[str, str, str]] = {
    "policies": ("hotset/policies/registry.py", "_BUILT_IN", "register_policy"),
    "storage schemes": ("hotset/storage/registry.py", "STORES", "register_scheme"),
    "system modules": ("hotset/systems/registry.py", "_BUILT_IN", "register_module"),
}


def _literal_entries(tree: ast.Module, table: str) -> Iterator[tuple[str, int]]:
    """(name, line) of each literal key of dict ``table`` (or item of list ``table``)."""
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == table for t in targets):
            continue
        items = value.keys if isinstance(value, ast.Dict) else getattr(value, "elts", [])
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                yield item.value, item.lineno


def _register_calls(tree: ast.Module, function: str) -> Iterator[tuple[str, int]]:
    """(name, line) of each ``function("literal", ...)`` call (a bare name or an attribute)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        if called == function and isinstance(first, ast.Constant) and isinstance(first.value, str):
            yield first.value, node.lineno


def registered_twice(
    src: Path = SRC, registries: dict[str, tuple[str, str, str]] = REGISTRIES
) -> list[str]:
    """Each name that a registry's literal table and ``register_*`` calls give more than once."""
    trees = {
        path.relative_to(src).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(src.rglob("*.py"))
    }
    findings = []
    for registry, (home, table, function) in registries.items():
        where: dict[str, list[str]] = {}
        for name, line in _literal_entries(trees[home], table):
            where.setdefault(name, []).append(f"{home}:{line}")
        for path, tree in trees.items():
            for name, line in _register_calls(tree, function):
                where.setdefault(name, []).append(f"{path}:{line}")
        findings += [
            f"{registry}: {name!r} is registered {len(places)} times: {', '.join(places)}"
            for name, places in sorted(where.items())
            if len(places) > 1
        ]
    return findings


def systems_defined_twice() -> list[str]:
    """Each system name that more than one ``SPECS`` entry (in any listed module) defines."""
    from hotset.systems import registry

    where: dict[str, list[str]] = {}
    for module_name in registry.MODULES.names():
        for spec in getattr(importlib.import_module(module_name), "SPECS", []):
            where.setdefault(spec.name, []).append(module_name)
    return [
        f"system {name!r} is defined {len(places)} times: {', '.join(places)}"
        for name, places in sorted(where.items())
        if len(places) > 1
    ]


def test_no_name_is_registered_twice_in_any_registry() -> None:
    findings = registered_twice() + systems_defined_twice()
    assert not findings, "\n".join(findings)


def test_lru_is_one_policy_and_one_system() -> None:
    """The word ``lru`` names one policy and one system (built on that policy), once each."""
    from hotset.policies.lru import LRU
    from hotset.policies.registry import policy_class, policy_names
    from hotset.systems.registry import get_spec, system_names

    assert policy_names().count("lru") == 1 and policy_class("lru") is LRU
    assert system_names().count("lru") == 1
    lru = get_spec("lru").build(n=4, budget=Budget(capacity_items=2), seed=0)
    assert isinstance(lru.policy, LRU)


def test_a_policy_name_registered_again_for_another_class_is_refused() -> None:
    from hotset.policies import registry

    registry.register_policy("lru", "hotset.policies.lru:LRU")  # the same target: idempotent
    assert registry.policy_class("lru").__name__ == "LRU"
    with pytest.raises(HotsetError, match="policy 'lru' is already registered"):
        registry.register_policy("lru", "hotset.policies.fifo:FIFO")
    assert registry.policy_class("lru").__name__ == "LRU"


def test_a_duplicate_in_a_table_or_a_register_call_is_named(tmp_path: Path) -> None:
    files = {
        "hotset/policies/registry.py": (
            '_BUILT_IN: dict[str, str] = {\n    "lru": "a:LRU",\n    "lru": "b:LRU",\n}\n'
        ),
        "hotset/storage/registry.py": '_FACTORIES = {}\nregister_scheme("s3", f)\n',
        "hotset/systems/registry.py": '_BUILT_IN = ["hotset.systems.baselines"]\n',
        "hotset/plugin.py": (
            "import hotset.storage.registry as r\n"
            'r.register_scheme("s3", g)\nregister_module("hotset.systems.extra")\n'
        ),
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert registered_twice(tmp_path) == [
        "policies: 'lru' is registered 2 times: "
        "hotset/policies/registry.py:2, hotset/policies/registry.py:3",
        "storage schemes: 's3' is registered 2 times: "
        "hotset/plugin.py:2, hotset/storage/registry.py:2",
    ]
