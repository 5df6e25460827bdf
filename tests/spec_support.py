"""Read back the System a driver built, to check that a spec's options reached it."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from hotset.systems.base import System
from hotset.systems.registry import build_system


def record_builds(monkeypatch: pytest.MonkeyPatch, module: str) -> list[System]:
    """Every System ``module`` (which imported ``build_system``) builds from now on, in order."""
    built: list[System] = []

    def keep(*args: Any, **kwargs: Any) -> System:
        built.append(build_system(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(importlib.import_module(module), "build_system", keep)
    return built
