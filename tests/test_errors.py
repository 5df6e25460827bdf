"""hotset.errors: bad input is a ValueError, a runtime failure a RuntimeError, both HotsetErrors.

Every exception class under ``src/hotset`` that derives from :class:`HotsetError` is
listed here as one kind or the other (read from the source with ast), so a new one
cannot land without someone deciding which it is.
"""

from __future__ import annotations

import ast
import importlib
import pickle
from pathlib import Path

import pytest

import hotset
from hotset.errors import HotsetError, HotsetRuntimeError, IntegrityError, StorageError

SRC = Path(__file__).resolve().parents[1] / "src"

#: failures at run time: a store, a cache server, a process, the data changed
RUNTIME = {
    "hotset.errors:IntegrityError",
    "hotset.errors:StorageError",
    "hotset.errors:WorkerDied",
    "hotset.cachestore.base:PutRefused",
    "hotset.cachestore.redis_connect:CacheUnavailable",
    "hotset.data.itemcodec:ItemDecodeError",
    "hotset.data.package_writer:PackageWriteError",
    "hotset.torch.sequencer:StalePlan",
    "hotset.torch.sequencer:HolderDied",
}
#: bad input or configuration (HotsetError itself is raised directly for it)
INPUT: set[str] = set()


def _error_classes() -> set[str]:
    """``module:Class`` of every class in src/hotset whose bases name a hotset error class."""
    found: dict[str, str] = {}  # class name -> module:Class
    bases_of: dict[str, list[str]] = {}
    for path in sorted((SRC / "hotset").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names = [
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                ]
                found[node.name] = f"{module}:{node.name}"
                bases_of[node.name] = names
    ours = {"HotsetError"}
    grew = True
    while grew:  # classes deriving from ours, transitively (names are unique enough here)
        more = {name for name, bases in bases_of.items() if ours & set(bases)}
        grew = not more <= ours
        ours |= more
    return {found[name] for name in ours - {"HotsetError", "HotsetRuntimeError"}}


def _load(target: str) -> type[BaseException]:
    module, _, name = target.partition(":")
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type) and issubclass(cls, BaseException)
    return cls


def test_every_hotset_error_class_is_classified() -> None:
    unlisted = sorted(_error_classes() - RUNTIME - INPUT)
    assert not unlisted, f"say whether these are runtime failures or bad input: {unlisted}"
    gone = sorted((RUNTIME | INPUT) - _error_classes())
    assert not gone, f"listed here but not in src/hotset: {gone}"


def test_bad_input_stays_a_value_error_and_is_no_runtime_error() -> None:
    assert issubclass(HotsetError, ValueError)
    assert not issubclass(HotsetError, RuntimeError)
    with pytest.raises(ValueError, match="bad"):
        raise HotsetError("bad")
    for target in INPUT:
        cls = _load(target)
        assert issubclass(cls, HotsetError) and not issubclass(cls, HotsetRuntimeError), target


@pytest.mark.parametrize("target", sorted(RUNTIME))
def test_a_runtime_failure_is_a_runtime_error_and_still_a_hotset_error(target: str) -> None:
    cls = _load(target)
    assert issubclass(cls, HotsetRuntimeError), target
    assert issubclass(cls, RuntimeError), target
    assert issubclass(cls, HotsetError), target  # the CLI's one line, the worker's hand-back


def test_runtime_failures_are_caught_apart_from_mistakes() -> None:
    """``except HotsetRuntimeError`` first, then ``except ValueError`` for bad input."""

    def kind(exc: Exception) -> str:
        try:
            raise exc
        except HotsetRuntimeError:
            return "failure"
        except ValueError:
            return "mistake"

    assert kind(StorageError("s3://b/k: gone")) == "failure"
    assert kind(IntegrityError("k: xxh3 mismatch")) == "failure"
    assert kind(HotsetError("cache= must be a fraction")) == "mistake"
    with pytest.raises(RuntimeError):
        raise StorageError("x")


def test_the_package_exports_both_bases() -> None:
    assert hotset.HotsetError is HotsetError
    assert hotset.HotsetRuntimeError is HotsetRuntimeError
    assert "HotsetRuntimeError" in hotset.__all__


@pytest.mark.parametrize(
    "target",
    [
        "hotset.errors:StorageError",
        "hotset.errors:IntegrityError",
        "hotset.cachestore.redis_connect:CacheUnavailable",
        "hotset.torch.sequencer:HolderDied",
        "hotset.torch.sequencer:StalePlan",
    ],
)
def test_a_runtime_failure_survives_the_trip_from_a_worker(target: str) -> None:
    """A DataLoader worker's error reaches the main process pickled (or re-made from its
    message): the class and the message survive, so the loader raises what happened."""
    cls = _load(target)
    back = pickle.loads(pickle.dumps(cls("key k of store s failed")))
    assert type(back) is cls and str(back) == "key k of store s failed"
    assert type(cls(str(back))) is cls
