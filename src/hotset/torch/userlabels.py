"""The labels of a user's Dataset wrapped by :func:`hotset.from_dataset`: given, found or derived.

Why this is strict. The loader's ``y`` is the manifest's label, and ``-1`` is
hotset's "no label" (a flat folder imported without classes). A Dataset read
through ``read=`` (raw bytes) never shows hotset its labels, so they used to be
``-1`` for every sample without a word, and training failed an epoch later in the
loss (``IndexError: Target -1 is out of bounds``), far from the cause. Now the
labels are, in this order:

1. ``labels=[...]``, one integer per index, when given (``-1`` marks an
   unlabeled sample, since the user said so);
2. ``labels=None``, given explicitly: the data has no labels (self-supervised,
   autoencoders); every ``y`` is ``-1``;
3. the ``(input, label)`` items ``__getitem__`` returned while measuring;
4. derived from the Dataset as torchvision keeps them: ``.targets``
   (``ImageFolder``, ``DatasetFolder``, ``MNIST``, ``CIFAR10``) or ``.samples``
   of ``(path, label)`` pairs -- unless it has a ``target_transform``, which
   ``read=`` would bypass, so the derived labels could differ from ``ds[i][1]``;
5. otherwise a :class:`~hotset.errors.HotsetError` naming ``labels=``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from hotset.errors import HotsetError

__all__ = ["NOT_GIVEN", "LabelsArg", "NotGiven", "resolve_labels"]


class NotGiven(enum.Enum):
    """``labels=`` left out (distinct from ``labels=None``, "this data has no labels")."""

    NOT_GIVEN = "not given"


NOT_GIVEN = NotGiven.NOT_GIVEN

#: what ``from_dataset(labels=...)`` accepts
LabelsArg = Sequence[int] | np.ndarray | None | NotGiven


def resolve_labels(dataset: Any, given: LabelsArg, found: np.ndarray | None) -> np.ndarray:
    """One int64 label per index of ``dataset`` (see the module for the order).

    ``found`` is what measuring the items found (``-1`` where an item was no
    ``(input, label)`` pair), or None when nothing was measured.
    """
    n = len(dataset)
    if given is None:
        return np.full(n, -1, dtype=np.int64)
    if not isinstance(given, NotGiven):
        return _checked(given, n, "labels")
    if found is not None and (found >= 0).all():
        return found
    derived = _derived(dataset, n)
    if derived is not None:
        return derived
    raise HotsetError(_missing_message(dataset, found))


def _checked(values: object, n: int, name: str) -> np.ndarray:
    """``values`` as ``n`` int64 labels, each an integer >= -1 (-1: no label)."""
    try:
        arr = np.asarray(values).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise HotsetError(f"{name} must be {n} integer labels: {exc}") from None
    if len(arr) != n:
        raise HotsetError(f"{name} must have {n} entries (one per index), got {len(arr)}")
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise HotsetError(f"{name} must be integer labels, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating) and not (
        np.isfinite(arr).all() and (arr == np.round(arr)).all()
    ):
        bad = int(np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))[0])
        raise HotsetError(f"{name}[{bad}] = {arr[bad].item()!r} is not an integer label")
    out = arr.astype(np.int64)
    if (out < -1).any():
        bad = int(np.flatnonzero(out < -1)[0])
        raise HotsetError(f"{name}[{bad}] = {out[bad]} is not a label (integers >= 0; -1: none)")
    return out


def _derived(dataset: Any, n: int) -> np.ndarray | None:
    """Labels from torchvision's attributes (``.targets``, ``.samples``), or None."""
    if getattr(dataset, "target_transform", None) is not None:
        return None  # ds[i][1] is the transformed target: .targets would not match it
    cls = type(dataset).__name__
    targets = getattr(dataset, "targets", None)
    if targets is not None and not callable(targets):
        if hasattr(targets, "tolist"):  # a tensor (MNIST) or an array
            targets = targets.tolist()
        return _checked(targets, n, f"{cls}.targets")
    samples = getattr(dataset, "samples", None)
    if isinstance(samples, Sequence) and len(samples) == n and _are_pairs(samples):
        return _checked([s[1] for s in samples], n, f"{cls}.samples' labels")
    return None


def _are_pairs(samples: Sequence[Any]) -> bool:
    return all(isinstance(s, tuple | list) and len(s) == 2 for s in samples)


def _missing_message(dataset: Any, found: np.ndarray | None) -> str:
    cls = type(dataset).__name__
    if found is None:
        why = "nothing was read to find them (read= gives bytes only; sizes= reads nothing)"
    else:
        first = int(np.flatnonzero(found < 0)[0])
        why = f"{cls}[{first}] is no (input, int label) pair"
    hint = (
        " (it has a target_transform, which read= would bypass)"
        if getattr(dataset, "target_transform", None) is not None
        else ""
    )
    return (
        f"from_dataset({cls}): no labels: {why}, and it has no .targets or .samples of "
        f"(path, label) to take them from{hint}; pass hotset.from_dataset(ds, ..., "
        "labels=[the label of index 0, 1, ...]) (one integer per index, e.g. "
        "labels=ds.targets), or labels=None for data without labels (every y is then -1), "
        "and give hotset.loader what it returns"
    )
