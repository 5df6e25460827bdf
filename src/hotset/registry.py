"""One registry type for everything a plug-in can add: stores, policies, systems.

There were four registries of four shapes (a dict of store factories, a dict of
``"module:Class"`` strings, a list of modules holding ``SPECS``, an if-chain for cache
backends), each with its own rules for a name registered twice and its own error for
an unknown one. A :class:`Registry` is the one shape: a name maps to an entry, which may
be given as ``"module:attr"`` (or ``"module"``) text so that naming it imports nothing
until it is used; registering the same entry again is a no-op, another entry for a
taken name needs ``replace=True`` (a plug-in silently taking ``lru`` or ``s3`` would
change every job built on it), and an unknown name is a
:class:`~hotset.errors.HotsetError` that lists the known ones and the nearest.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from hotset.errors import HotsetError, did_you_mean

__all__ = ["Registry"]

T = TypeVar("T")


def _load(target: str) -> Any:
    """``"pkg.mod:attr"`` -> that attribute; ``"pkg.mod"`` -> the module."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def _describe(entry: object) -> str:
    if isinstance(entry, str):
        return entry
    module = getattr(entry, "__module__", None)
    name = getattr(entry, "__qualname__", None)
    return f"{module}.{name}" if module and name else repr(entry)


class Registry(Generic[T]):
    """Names -> entries of one ``kind``, in registration order, open to plug-ins.

    ``check`` (optional) refuses a loaded entry that is not of the kind (an
    ``AssertionError`` would be a plug-in's bug reported as ours).
    """

    def __init__(self, kind: str, *, check: Callable[[Any], bool] | None = None) -> None:
        self.kind = kind
        self._check = check
        self._entries: dict[str, T | str] = {}
        self._loaded: dict[str, T] = {}

    def register(self, name: str, entry: T | str, *, replace: bool = False) -> None:
        """Register ``entry`` (or ``"module:attr"`` text for it) under ``name``."""
        if not isinstance(name, str) or not name:
            raise HotsetError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if not isinstance(replace, bool):
            raise HotsetError(f"register: replace must be True or False, got {replace!r}")
        known = self._entries.get(name)
        if known is not None and known is not entry and known != entry and not replace:
            raise HotsetError(
                f"{self.kind} {name!r} is already registered as {_describe(known)}; pass "
                f"replace=True to register {_describe(entry)} instead"
            )
        self._entries[name] = entry
        self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a plug-in's test cleaning up); an unknown name is an error."""
        self._known(name)
        del self._entries[name]
        self._loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        """Every registered name, in registration order."""
        return list(self._entries)

    def target(self, name: str) -> str:
        """What ``name`` is registered as, for messages (``"module:attr"`` or a qualname)."""
        return _describe(self._known(name))

    def get(self, name: str) -> T:
        """The entry of ``name``, imported on first use where it was given as text."""
        if name in self._loaded:
            return self._loaded[name]
        entry = self._known(name)
        value = _load(entry) if isinstance(entry, str) else entry
        if self._check is not None and not self._check(value):
            raise HotsetError(
                f"{self.kind} {name!r} is registered as {_describe(entry)}, which is not a "
                f"{self.kind}"
            )
        self._loaded[name] = value
        return value

    def _known(self, name: str) -> T | str:
        entry = self._entries.get(name)
        if entry is None:
            known = self.names()
            raise HotsetError(
                f"unknown {self.kind} {name!r}{did_you_mean(name, known)}; choose from "
                f"{', '.join(sorted(known))}"
            )
        return entry

    def snapshot(self) -> dict[str, T | str]:
        """The registrations as they are (a test restores them with :meth:`restore`)."""
        return dict(self._entries)

    def restore(self, snapshot: dict[str, T | str]) -> None:
        """Put back the registrations :meth:`snapshot` took."""
        self._entries = dict(snapshot)
        self._loaded.clear()
