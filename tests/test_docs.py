"""README.md stays short and its docs/ pages stay linked, reachable and true to the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 160

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # no headings in code
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, flags=re.M)}


def _relative_links(page: Path) -> list[tuple[Path, str]]:
    """(target file, anchor) of each relative link on ``page``; code blocks skipped."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    out = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        out.append(((page.parent / path).resolve() if path else page, anchor))
    return out


def test_readme_is_short() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


def test_every_relative_link_points_to_a_file_and_heading_that_exist() -> None:
    broken = []
    for page in _pages():
        for target, anchor in _relative_links(page):
            where = f"{page.relative_to(ROOT)} -> {target}#{anchor}"
            if not target.exists():
                broken.append(where)
            elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
                broken.append(where + " (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    seen: set[Path] = set()
    todo = [README.resolve()]
    while todo:
        page = todo.pop()
        if page in seen or page.suffix != ".md" or not page.is_file():
            continue
        seen.add(page)
        todo += [target.resolve() for target, _ in _relative_links(page)]
    pages = {p.resolve() for p in DOCS.rglob("*.md")}
    assert pages, "docs/ has no pages"
    assert not pages - seen, sorted(str(p.relative_to(ROOT)) for p in pages - seen)


def test_the_readme_keeps_its_two_commands_and_the_system_table() -> None:
    text = README.read_text()
    assert "make demo" in text and "make test" in text
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, flags=re.M) and re.search(r"^test:", makefile, re.M)
    assert "## Which system should I use" in text
    assert "loader.update(ids, loss.detach())" in text  # the usage example


def test_seed_systems_each_have_a_page_naming_every_system_they_list() -> None:
    from hotset.systems.registry import all_specs

    index = (DOCS / "systems" / "README.md").read_text()
    for spec in all_specs():
        assert f"`{spec.name}`" in index, f"docs/systems/README.md does not list {spec.name}"
    for page in ("shade", "icache", "impact", "quiver", "brand"):
        text = (DOCS / "systems" / f"{page}.md").read_text()
        assert "## Paper mapping" in text and "## Deviations, and why" in text, page


def test_report_md_documents_every_key_of_a_loader_report_row() -> None:
    from hotset.torch.report import EpochStats

    text = (DOCS / "report.md").read_text()
    missing = [key for key in EpochStats(0).row() if f"| `{key}` |" not in text]
    assert not missing, f"docs/report.md lacks {missing}"


def test_benchmarks_md_names_every_terminal_header_of_every_suite() -> None:
    from hotset.cli.bench_table import SUITE_COLUMNS

    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `(\w+)` \| (.+) \|$", (DOCS / "benchmarks.md").read_text(), re.M)
    }
    for suite, columns in SUITE_COLUMNS.items():
        assert suite in rows, f"docs/benchmarks.md has no terminal-columns row for {suite}"
        for header, _key in columns:
            assert f"`{header}`" in rows[suite], f"{suite}: header {header} undocumented"


def test_cli_md_names_every_bench_suite() -> None:
    from hotset.cli.bench import _SUITE_MODULES

    text = (DOCS / "cli.md").read_text()
    missing = [suite for suite in _SUITE_MODULES if f"`{suite}`" not in text]
    assert not missing, f"docs/cli.md's hotset bench section does not name {missing}"
