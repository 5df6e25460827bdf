"""The CLI's modules import one another without a circle (issue 31)."""

from __future__ import annotations

import ast
from pathlib import Path

import hotset.cli

CLI_DIR = Path(hotset.cli.__file__).parent


def _cli_imports(path: Path) -> set[str]:
    """Every ``hotset.cli.X`` module that ``path`` imports, at its top or in a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        parts = [name.split(".") for name in names]
        found |= {p[2] for p in parts if p[:2] == ["hotset", "cli"] and len(p) > 2}
    found = {name for name in found if (CLI_DIR / f"{name}.py").exists()}
    return found - {path.stem}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as a path, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path, node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, node])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [])):
            return found
    return None


def test_the_cli_modules_import_each_other_without_a_circle() -> None:
    graph = {p.stem: _cli_imports(p) for p in CLI_DIR.glob("*.py") if p.stem != "__init__"}
    assert "simulate_nodes" in graph["simulate"]  # the scan sees imports inside functions
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
