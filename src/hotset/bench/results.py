"""Benchmark result files: one JSON per suite run, plus the README that indexes them.

Every result carries the exact command that produced it and the machine it ran
on, so a number in ``benchmarks/README.md`` can always be reproduced or doubted.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import sys
from pathlib import Path
from typing import Any

from hotset.fsutil import atomic_write

RESULTS_DIR = Path("benchmarks") / "results"


def checkout_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` whose pyproject.toml names the
    project ``hotset``: the source checkout a run inside it belongs to (None: none)."""
    import tomllib

    for folder in (start, *start.parents):
        project = folder / "pyproject.toml"
        try:
            name = tomllib.loads(project.read_text()).get("project", {}).get("name")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue  # no file, or not one we can read: not a checkout of ours
        if name == "hotset":
            return folder
    return None


def user_root() -> Path:
    """``$XDG_DATA_HOME/hotset`` (an absolute XDG_DATA_HOME only, as the XDG spec
    says), else ``~/.local/share/hotset``: results of a run outside a checkout."""
    from hotset.errors import HotsetError

    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "hotset"
    try:
        return Path.home() / ".local" / "share" / "hotset"
    except RuntimeError:
        raise HotsetError(
            "bench: no home directory to write results under; give --root DIR"
        ) from None


def default_root() -> Path:
    """Where ``hotset bench`` writes when neither ``--root`` nor ``--record`` is given:
    :func:`user_root`, wherever the run starts. Why not the checkout a run starts in: a
    run made to look at a figure would overwrite the committed record (its result and
    ``benchmarks/README.md``); the record is written on purpose, with ``--record``."""
    return user_root()


def record_root(cwd: Path | None = None) -> Path:
    """``--record``: the hotset checkout holding ``cwd`` (its committed ``benchmarks/``),
    from whichever subdirectory the run starts; outside one, a HotsetError."""
    from hotset.errors import HotsetError

    start = (cwd or Path.cwd()).resolve()
    found = checkout_root(start)
    if found is None:
        raise HotsetError(
            f"--record writes the committed results of a hotset checkout, and {start} is not "
            "inside one (no pyproject.toml naming the project hotset above it); give --root "
            "DIR to write elsewhere"
        )
    return found


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
    }
    try:
        import numpy

        info["numpy"] = numpy.__version__
    except ImportError:  # pragma: no cover - numpy is a core dependency
        pass
    if "torch" in sys.modules:
        info["torch"] = sys.modules["torch"].__version__
    return info


def command_line() -> str:
    """The command as the user typed it (``hotset ...``)."""
    argv = list(sys.argv)
    if argv and Path(argv[0]).name in {"hotset", "__main__.py"}:
        argv[0] = "hotset"
    return shlex.join(argv)


def write_result(
    suite: str, result: Any, *, root: Path | None = None, command: str | None = None
) -> Path:
    """Write ``<root>/benchmarks/results/<suite>.json`` and regenerate the README
    (``root`` None: :func:`default_root`, as ``hotset bench`` without ``--root``)."""
    root = default_root() if root is None else root
    doc = {
        "suite": suite,
        "command": command or command_line(),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "result": result,
    }
    path = root / RESULTS_DIR / f"{suite}.json"
    atomic_write(path, json.dumps(doc, indent=2, sort_keys=False) + "\n")
    render_readme(root=root)
    return path


def write_result_file(path: Path, suite: str, result: Any, command: str) -> Path:
    """Write a result to ``path`` as :func:`write_result` does (``suite``, ``command``,
    ``date``, ``machine``, ``result``), for a script that names its output file; the
    README is regenerated when ``path`` is a checkout's ``benchmarks/results/<suite>.json``,
    so that every result there renders."""
    path = Path(path)
    if path.parent.name == "results" and path.parent.parent.name == "benchmarks":
        root = path.parent.parent.parent
        if path.name == f"{suite}.json":
            return write_result(suite, result, root=root, command=command)
    doc = {
        "suite": suite,
        "command": command,
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "result": result,
    }
    atomic_write(path, json.dumps(doc, indent=2, sort_keys=False) + "\n")
    return path


def _table(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    # every column any row has, in first-seen order, "detail" last: rows of one
    # suite may measure different things (each fault scenario has its own counters)
    cols = list(dict.fromkeys(k for row in rows for k in row))
    if "detail" in cols:
        cols.remove("detail")
        cols.append("detail")
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        cells = []
        for c in cols:
            v = row.get(c, "")
            cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        out.append("| " + " | ".join(cells) + " |")
    return out


def render_readme(*, root: Path = Path(".")) -> Path:
    """Rebuild ``benchmarks/README.md`` from every committed result file."""
    results_dir = root / RESULTS_DIR
    lines = [
        "# hotset benchmarks",
        "",
        "Generated by `hotset bench`; do not edit by hand. Each section names the exact",
        "command that produced it and the machine it ran on. Figures are measured, not",
        "simulated, unless the section says *simulated*.",
        "",
    ]
    for path in sorted(results_dir.glob("*.json")):
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict) or "suite" not in doc:
            continue  # not a `hotset bench` result (a module's own file: quiver-mask.json)
        lines += [
            f"## {doc['suite']}",
            "",
            f"Command: `{doc['command']}`  ",
            f"Date: {doc['date']}  ",
        ]
        m = doc.get("machine", {})
        lines.append("Machine: " + ", ".join(f"{k} {v}" for k, v in m.items()) + "  ")
        lines.append("")
        result = doc["result"]
        if isinstance(result, dict) and isinstance(result.get("table"), list):
            lines += _table(result["table"])
        for note in result.get("notes", []) if isinstance(result, dict) else []:
            lines += ["", f"- {note}"]
        figures = [path.with_suffix(".png"), *sorted(results_dir.glob(f"{path.stem}_*.png"))]
        for fig in [f for f in figures if f.exists()]:
            lines += ["", f"![{fig.stem}](results/{fig.name})"]
        lines += ["", f"Raw: [results/{path.name}](results/{path.name})", ""]
    readme = root / "benchmarks" / "README.md"
    atomic_write(readme, "\n".join(lines) + "\n")
    return readme
