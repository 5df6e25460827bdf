"""The loader's options live in one checked object, and the loader is small parts.

``hotset.torch.options.LoaderOptions`` holds every option's type, default, check
and doc; the ``hotset.loader`` docstring is made from it. These tests hold the
parts to that: the docstring names every option, an unknown option names the
nearest known one, options are checked before a user's Dataset is read, and no
function in ``src/hotset/torch`` grows past 80 lines again.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from user_support import Folder

import hotset
from hotset.data.manifest import Manifest
from hotset.torch.options import LoaderOptions

TORCH_SRC = Path(hotset.__file__).parent / "torch"
MAX_FUNCTION_LINES = 80


def test_no_function_in_the_torch_package_is_longer_than_80_lines() -> None:
    long = []
    for path in sorted(TORCH_SRC.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    assert len(list(TORCH_SRC.glob("*.py"))) > 10  # the walk saw the package
    assert long == [], f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_loader_docstring_lists_every_option_with_its_default() -> None:
    doc = hotset.loader.__doc__
    assert doc is not None
    fields = dataclasses.fields(LoaderOptions)
    assert len(fields) >= 27
    for f in fields:
        assert f"``{f.name}`` ({f.type}, default ``{f.default!r}``)" in doc, f.name
        assert f.metadata["doc"], f"option {f.name} has no doc"


def test_an_unknown_option_is_a_type_error_naming_the_nearest(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with pytest.raises(TypeError, match=r"'num_worker' \(did you mean 'num_workers'\?\)"):
        hotset.loader(data, num_worker=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'zzz';"):
        hotset.torch.HotsetLoader(data, zzz=1)


def test_the_loader_keeps_its_checked_options(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with hotset.loader(data, system="lru", batch_size=16, num_workers=1, seed=3) as loader:
        options = loader.options
        assert isinstance(options, LoaderOptions)
        assert (options.batch_size, options.seed, options.num_workers) == (16, 3, 1)
        assert options.prefetch_factor == 2  # torch's default, filled in
        assert loader.lag == options.lag == 2
        with pytest.raises(dataclasses.FrozenInstanceError):
            options.batch_size = 8  # type: ignore[misc]


def test_options_are_checked_before_a_users_dataset_is_read(dataset_dir: Path) -> None:
    """A bad option fails at once, not after every item of the user's Dataset was read."""
    manifest = Manifest.load(dataset_dir / "manifest.csv")

    class Counting(Folder):
        reads = 0

        def read(self, index: int) -> bytes:
            type(self).reads += 1
            return super().read(index)

    folder = Counting(dataset_dir, list(manifest.keys), [int(v) for v in manifest.labels])
    bad: dict[str, Any] = {"batch_size": 0}
    with pytest.raises(hotset.HotsetError, match="batch_size must be an integer >= 1"):
        hotset.loader(folder, system="lru", **bad)
    assert Counting.reads == 0
    with hotset.loader(folder, system="lru", batch_size=16) as loader:
        assert len(loader) == 13
    assert Counting.reads >= len(manifest)  # wrapping the Dataset reads it
