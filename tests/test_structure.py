"""Structure checks over ``src/hotset``, read from the source (ast), never imported.

The layout is only worth something while it holds, so the test suite checks it:

* the engine owns its contract: no module under ``hotset.engine`` imports
  ``hotset.policies`` or ``hotset.systems`` (:func:`engine_upward_imports`);
* no import cycles between modules (:func:`module_cycles`) nor between packages
  (:func:`package_cycles`), and none either when the imports under ``if
  TYPE_CHECKING:`` are counted too (``typing=True``): a type-only import still ties
  two modules together, and hides the circle from the run-time check;
* the lower layers do not import the rooms above them, not even for a type
  (:func:`layer_violations`, :data:`LOWER_LAYERS`): the importance tables and
  scorers never import the samplers, the policies or the systems built on them;
* no function or method anywhere in ``src/hotset`` over :data:`MAX_FUNCTION_LINES`
  lines (:func:`long_functions`) or taking more than :data:`MAX_PARAMETERS` parameters
  (:func:`many_parameters`): a longer one is several jobs, and a longer list is a
  bundle that wants a name (an options dataclass, :mod:`hotset.options`);
* README.md stays short and points at pages under docs/ that exist
  (:func:`readme_problems`).

Each check returns human-readable findings (empty when it holds); the tests assert
that they are empty, and ``python tests/test_structure.py`` prints them all, so a
person and the suite read the same logic.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "hotset"

#: longest function or method allowed where :data:`SHORT_FUNCTION_PACKAGES` live
MAX_FUNCTION_LINES = 80
SHORT_FUNCTION_PACKAGES = ("hotset",)
#: most parameters a function or method takes (``self``/``cls`` not counted; ``*args``
#: and ``**kwargs`` one each)
MAX_PARAMETERS = 12
#: README.md's length limit in lines
MAX_README_LINES = 160
#: what the engine must not import: the rooms it drives
ENGINE = "hotset.engine"
ENGINE_FORBIDDEN = ("hotset.policies", "hotset.systems")
#: a lower package -> the packages above it that it must not import, type-only imports
#: included (a Protocol in the lower package stands for what it needs of the higher one)
LOWER_LAYERS: dict[str, tuple[str, ...]] = {
    "hotset.engine": ("hotset.policies", "hotset.systems"),
    "hotset.importance": (
        "hotset.samplers",
        "hotset.policies",
        "hotset.systems",
        "hotset.torch",
        "hotset.sim",
    ),
}


@dataclass(frozen=True)
class Import:
    """One import of a hotset module, as written in ``source`` at ``line``."""

    source: str  # the importing module
    target: str  # the imported module (resolved, see :func:`import_graph`)
    line: int
    text: str  # the import statement, as written

    def describe(self) -> str:
        return f"{self.source}:{self.line}: {self.text}"


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def module_files(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package by dotted name (a package is its ``__init__.py``)."""
    modules: dict[str, Path] = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _is_literal_import_module(node: ast.AST) -> bool:
    """``importlib.import_module("hotset.x")`` (or a bare ``import_module``) with a literal name."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    first = node.args[0]
    return (
        name == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str)
    )


def _import_nodes(
    node: ast.AST, typing: bool = False
) -> Iterator[ast.Import | ast.ImportFrom | ast.Call]:
    """Import statements anywhere in ``node`` (functions too), outside TYPE_CHECKING blocks
    unless ``typing`` (then inside them too).

    A call ``importlib.import_module("literal")`` counts as an import too: it is one,
    written differently. Imports by computed names (the registries) cannot be read
    statically and are not counted.
    """
    if not typing and isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            yield from _import_nodes(child, typing)
        return
    if isinstance(node, ast.Import | ast.ImportFrom | ast.Call) and (
        not isinstance(node, ast.Call) or _is_literal_import_module(node)
    ):
        yield node
    for child in ast.iter_child_nodes(node):
        yield from _import_nodes(child, typing)


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of dotted ``name`` that is one of our modules (None: not ours)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _targets(
    node: ast.Import | ast.ImportFrom | ast.Call, module: str, modules: dict[str, Path]
) -> list[str]:
    """The hotset modules one import statement imports (see :func:`import_graph`)."""
    if isinstance(node, ast.Call):
        arg = node.args[0]
        assert isinstance(arg, ast.Constant)
        names = [str(arg.value)]
    elif isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if modules[module].name != "__init__.py":
                package.pop()
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([base] if base else [])])
        # ``from pkg import name``: the module pkg.name if there is one, else pkg
        names = [
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
            for alias in node.names
        ]
    found = (_resolve(name, modules) for name in names if _within(name, PACKAGE))
    return sorted({target for target in found if target is not None})


def imports_of(module: str, modules: dict[str, Path], typing: bool = False) -> list[Import]:
    """Every import of a hotset module that ``module`` makes, lazy ones included (and
    type-only ones with ``typing``)."""
    path = modules[module]
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    lines = source.splitlines()
    found: list[Import] = []
    for node in _import_nodes(tree, typing):
        text = lines[node.lineno - 1].strip()  # the statement's first line names it
        for target in _targets(node, module, modules):
            if target != module:
                found.append(Import(module, target, node.lineno, text))
    return found


def import_graph(src: Path = SRC, typing: bool = False) -> dict[str, list[Import]]:
    """The module-level import graph: module -> the imports it makes.

    Rules (one node per module; a package is its ``__init__`` module):

    * every import statement counts, at the top or inside a function, except those
      under ``if TYPE_CHECKING:`` (they never run) unless ``typing``; so do
      ``importlib.import_module`` calls with a literal name;
    * ``import hotset.a.b`` imports the module ``hotset.a.b``; ``from hotset.a import
      name`` imports ``hotset.a.name`` when that is a module, else ``hotset.a``;
    * the parent packages an import runs on the way (``hotset/a/__init__.py`` for
      ``hotset.a.b``) are not edges: a package ``__init__`` is a node only through
      what it imports itself and the imports that name it (``from hotset.a import X``
      where X is defined or re-exported there). Counting the implicit edges would
      put every re-exporting ``__init__`` in a circle with its own submodules and
      hide the circles that matter.
    """
    modules = module_files(src)
    return {module: imports_of(module, modules, typing) for module in modules}


def strongly_connected(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return sorted(components)


def _cycles(graph: dict[str, list[Import]], node_of: dict[str, str]) -> list[str]:
    """Each circle of more than one node, with the import lines that close it."""
    edges: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], list[Import]] = {}
    for imports in graph.values():
        for imp in imports:
            a, b = node_of[imp.source], node_of[imp.target]
            if a != b:
                edges.setdefault(a, set()).add(b)
                lines.setdefault((a, b), []).append(imp)
    nodes = sorted(set(node_of.values()))
    findings = []
    for component in strongly_connected(nodes, edges):
        if len(component) < 2:
            continue
        members = set(component)
        inside = [
            imp.describe()
            for a in component
            for b in sorted(edges.get(a, set()) & members)
            for imp in lines[(a, b)]
        ]
        findings.append(f"cycle through {', '.join(component)}:\n    " + "\n    ".join(inside))
    return findings


def module_cycles(src: Path = SRC, typing: bool = False) -> list[str]:
    """Strongly connected components of more than one module (see :func:`import_graph`)."""
    graph = import_graph(src, typing)
    return _cycles(graph, {module: module for module in graph})


def package_of(module: str) -> str:
    """``hotset.X`` for a module under the subpackage ``hotset/X/``; else the module itself."""
    parts = module.split(".")
    return ".".join(parts[:2])


def package_cycles(src: Path = SRC, typing: bool = False) -> list[str]:
    """Circles between packages: ``hotset.X`` per subpackage, top-level modules on their own.

    A top-level module (``hotset.errors``) is a node of its own, and so is
    ``hotset`` (its ``__init__``); imports within one package are not edges.
    """
    graph = import_graph(src, typing)
    modules = module_files(src)
    node_of = {
        module: module if modules[module].parent == src / PACKAGE else package_of(module)
        for module in graph
    }
    return _cycles(graph, node_of)


def engine_upward_imports(src: Path = SRC) -> list[str]:
    """Imports from a module under ``hotset.engine`` into the policies or the systems."""
    graph = import_graph(src)
    return [
        imp.describe()
        for module, imports in graph.items()
        if _within(module, ENGINE)
        for imp in imports
        if any(_within(imp.target, forbidden) for forbidden in ENGINE_FORBIDDEN)
    ]


def layer_violations(
    src: Path = SRC, layers: dict[str, tuple[str, ...]] = LOWER_LAYERS
) -> list[str]:
    """Imports, type-only ones included, from a lower package into one above it."""
    graph = import_graph(src, typing=True)
    return [
        imp.describe()
        for module, imports in graph.items()
        for lower, above in layers.items()
        if _within(module, lower)
        for imp in imports
        if any(_within(imp.target, higher) for higher in above)
    ]


def typed_cycles(src: Path = SRC) -> list[str]:
    """Module and package circles, the imports under ``if TYPE_CHECKING:`` counted."""
    return module_cycles(src, typing=True) + package_cycles(src, typing=True)


def _functions(
    src: Path, packages: tuple[str, ...]
) -> Iterator[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method of the modules under ``packages``, with its file."""
    for module, path in module_files(src).items():
        if not any(_within(module, package) for package in packages):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield path, node


def long_functions(
    src: Path = SRC,
    packages: tuple[str, ...] = SHORT_FUNCTION_PACKAGES,
    limit: int = MAX_FUNCTION_LINES,
) -> list[str]:
    """Functions and methods over ``limit`` lines (def line to last line, docstring included)."""
    findings = []
    for path, node in _functions(src, packages):
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        if length > limit:
            where = path.relative_to(src.parent)
            findings.append(f"{where}:{node.lineno}: {node.name} has {length} lines")
    return sorted(findings)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    names = [*args.posonlyargs, *args.args]
    count = len(names) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
    return count - (1 if names and names[0].arg in ("self", "cls") else 0)


def many_parameters(
    src: Path = SRC,
    packages: tuple[str, ...] = SHORT_FUNCTION_PACKAGES,
    limit: int = MAX_PARAMETERS,
) -> list[str]:
    """Functions and methods taking more than ``limit`` parameters."""
    findings = []
    for path, node in _functions(src, packages):
        count = _parameters(node)
        if count > limit:
            where = path.relative_to(src.parent)
            findings.append(f"{where}:{node.lineno}: {node.name} takes {count} parameters")
    return sorted(findings)


_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)[^)]*\)|^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)


def readme_problems(root: Path = ROOT, limit: int = MAX_README_LINES) -> list[str]:
    """README.md over ``limit`` lines, without a link into docs/, or linking to a missing file."""
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    findings = []
    n_lines = len(text.splitlines())
    if n_lines > limit:
        findings.append(f"README.md has {n_lines} lines (at most {limit})")
    targets = [a or b for a, b in _LINK.findall(text)]
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]
    local = [t for t in local if t]
    docs = [t for t in local if t.removeprefix("./").startswith("docs/")]
    if not docs:
        findings.append("README.md links to no page under docs/")
    findings += [
        f"README.md links to {target}, which does not exist"
        for target in local
        if not (root / target).exists()
    ]
    return findings


# -- the tests -----------------------------------------------------------------------


def _report(findings: list[str]) -> str:
    return f"{len(findings)} offender(s):\n" + "\n".join(findings)


def test_engine_imports_no_policy_nor_system() -> None:
    """The engine owns its contract; lazy imports count too, ``if TYPE_CHECKING:`` ones do not."""
    findings = engine_upward_imports()
    assert not findings, _report(findings)


def test_no_module_import_cycles() -> None:
    """No strongly connected component of more than one module.

    Every import counts, lazy ones too, ``if TYPE_CHECKING:`` blocks excepted. A package
    ``__init__`` is a node of its own, reached only by imports that name the package
    (``from hotset.data import open_dataset``); the parent packages an import of
    ``hotset.a.b`` runs on the way are not edges (see :func:`import_graph`).
    """
    findings = module_cycles()
    assert not findings, _report(findings)


def test_no_package_import_cycles() -> None:
    """The package graph (``hotset.X`` per subpackage, top-level modules alone) is acyclic."""
    findings = package_cycles()
    assert not findings, _report(findings)


def test_no_import_cycles_through_type_only_imports() -> None:
    """No circle of modules nor of packages even when ``if TYPE_CHECKING:`` imports count.

    A type-only import back into the module that imports you is a circle all the same:
    the two can be neither read nor moved apart. A Protocol in the lower module, naming
    what it uses of the higher one, breaks it (:class:`hotset.torch.movebytes.MoveParts`).
    """
    findings = typed_cycles()
    assert not findings, _report(findings)


def test_lower_layers_import_nothing_above_them() -> None:
    """:data:`LOWER_LAYERS`: the engine and the importance tables import no room above them,
    type-only imports included (:class:`hotset.importance.merge.Learner` stands for a system).
    """
    findings = layer_violations()
    assert not findings, _report(findings)


def test_functions_are_short() -> None:
    """Every function fits on a screen: def line to last line, <= 80 (issue #42)."""
    findings = long_functions()
    assert not findings, _report(findings)


def test_functions_take_few_parameters() -> None:
    """No function takes more than 12 parameters (issue #42)."""
    findings = many_parameters()
    assert not findings, _report(findings)


def test_readme_is_short_and_links_to_docs() -> None:
    """README.md is a front page (<= 160 lines); the detail is in docs/ pages it links."""
    findings = readme_problems()
    assert not findings, _report(findings)


# -- the checks catch what they claim (a small package written to tmp_path) ----------


def _write(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path -> source) under ``root``; return ``root / "src"``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "src"


def test_a_lazy_circle_is_found_and_a_type_checking_one_is_not(tmp_path: Path) -> None:
    src = _write(
        tmp_path,
        {
            "src/hotset/__init__.py": "",
            "src/hotset/a/__init__.py": "",
            "src/hotset/a/x.py": "from hotset.b.y import f\n",
            "src/hotset/b/__init__.py": "",
            "src/hotset/b/y.py": "def f():\n    from hotset.a import x\n    return x\n",
            "src/hotset/b/z.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from hotset.c import w\n"
                "else:\n    import hotset.a.x\n"
            ),
            "src/hotset/c.py": "from .b import z\n",
        },
    )
    (cycle,) = module_cycles(src)
    assert cycle.startswith("cycle through hotset.a.x, hotset.b.y:")
    assert "hotset.b.y:2: from hotset.a import x" in cycle
    (packages,) = package_cycles(src)
    assert packages.startswith("cycle through hotset.a, hotset.b:")
    assert "hotset.c" not in packages  # b.z -> c is under TYPE_CHECKING only


def test_an_engine_import_of_a_policy_is_named(tmp_path: Path) -> None:
    src = _write(
        tmp_path,
        {
            "src/hotset/__init__.py": "",
            "src/hotset/engine/__init__.py": "",
            "src/hotset/engine/m.py": "def g():\n    from ..policies import base\n",
            "src/hotset/engine/ok.py": "from hotset.engine import m\n",
            "src/hotset/policies/__init__.py": "",
            "src/hotset/policies/base.py": "from hotset.engine.m import g\n",
        },
    )
    assert engine_upward_imports(src) == ["hotset.engine.m:2: from ..policies import base"]


def test_a_type_only_circle_and_an_upward_type_import_are_named(tmp_path: Path) -> None:
    src = _write(
        tmp_path,
        {
            "src/hotset/__init__.py": "",
            "src/hotset/torch/__init__.py": "",
            "src/hotset/torch/fetch.py": "from hotset.torch.move import Move\n",
            "src/hotset/torch/move.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from hotset.torch.fetch import Fetcher\n"
            ),
            "src/hotset/importance/__init__.py": "",
            "src/hotset/importance/merge.py": (
                "import typing\n"
                "if typing.TYPE_CHECKING:\n    from hotset.systems.base import System\n"
            ),
            "src/hotset/importance/table.py": "",
            "src/hotset/systems/__init__.py": "",
            "src/hotset/systems/base.py": "from hotset.importance import table\n",
        },
    )
    assert module_cycles(src) == [] and package_cycles(src) == []  # type-only: not run
    cycles = typed_cycles(src)
    assert [c.splitlines()[0] for c in cycles] == [
        "cycle through hotset.torch.fetch, hotset.torch.move:",
        "cycle through hotset.importance, hotset.systems:",
    ]
    assert "hotset.torch.move:3: from hotset.torch.fetch import Fetcher" in cycles[0]
    assert layer_violations(src) == [
        "hotset.importance.merge:3: from hotset.systems.base import System"
    ]


def test_a_function_over_the_limit_is_named(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 1))
    src = _write(
        tmp_path,
        {
            "src/hotset/torch/ok.py": f"def fits():\n{body}\n",
            "src/hotset/torch/long.py": (
                "class C:\n    def over(self):\n"
                + body.replace("    ", "        ")
                + "\n        y = 0\n"
            ),
            "src/hotset/data/long.py": f"def elsewhere():\n{body}\n    y = 0\n",
        },
    )
    assert long_functions(src) == [
        f"src/hotset/data/long.py:1: elsewhere has {MAX_FUNCTION_LINES + 1} lines",
        f"src/hotset/torch/long.py:2: over has {MAX_FUNCTION_LINES + 1} lines",
    ]


def test_a_function_over_the_parameter_limit_is_named(tmp_path: Path) -> None:
    twelve = ", ".join(f"a{i}" for i in range(MAX_PARAMETERS))
    src = _write(
        tmp_path,
        {
            "src/hotset/ok.py": f"class C:\n    def fits(self, {twelve}): ...\n",
            "src/hotset/sim/wide.py": f"def wide(*, {twelve}, **more): ...\n",
            "src/hotset/cli/star.py": f"def star({twelve}, *rest): ...\n",
        },
    )
    assert many_parameters(src) == [
        f"src/hotset/cli/star.py:1: star takes {MAX_PARAMETERS + 1} parameters",
        f"src/hotset/sim/wide.py:1: wide takes {MAX_PARAMETERS + 1} parameters",
    ]


def test_a_long_readme_and_a_missing_docs_page_are_named(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("# here\n")
    links = "[here](docs/here.md#top) [gone](./docs/gone.md) [web](https://example.org)\n"
    (tmp_path / "README.md").write_text(links)
    assert readme_problems(tmp_path) == ["README.md links to ./docs/gone.md, which does not exist"]
    (tmp_path / "README.md").write_text(links + "line\n" * MAX_README_LINES)
    assert readme_problems(tmp_path)[0] == (
        f"README.md has {MAX_README_LINES + 1} lines (at most {MAX_README_LINES})"
    )
    (tmp_path / "README.md").write_text("no links\n")
    assert readme_problems(tmp_path) == ["README.md links to no page under docs/"]


CHECKS = {
    "engine imports policies/systems": engine_upward_imports,
    "module import cycles": module_cycles,
    "package import cycles": package_cycles,
    "import cycles, type-only imports counted": typed_cycles,
    "lower layers importing above them": layer_violations,
    f"functions over {MAX_FUNCTION_LINES} lines in {', '.join(SHORT_FUNCTION_PACKAGES)}": (
        long_functions
    ),
    "README.md": readme_problems,
}


def main() -> int:
    """Print every check's findings; exit status 1 when any check has some."""
    failed = 0
    for title, check in CHECKS.items():
        findings = check()
        print(f"== {title}: {'ok' if not findings else _report(findings)}")
        failed += bool(findings)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
