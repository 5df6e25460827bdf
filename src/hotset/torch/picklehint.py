"""A worker start that fails to pickle a user's argument names it, and the fix.

Why. DataLoader workers started by ``spawn`` or ``forkserver`` (the loader picks
``forkserver`` itself where a fork could hang, :mod:`hotset.torch.forksafe`,
which is the case under ``torchrun`` on some Pythons) receive everything they
run by pickle: the data set's ``read=``, ``decode=`` and ``transform=``, the
user's own Dataset, ``collate_fn=`` and ``worker_init_fn=``. A lambda or a
function nested in another cannot be pickled, and the error torch lets through
(``Can't pickle <function <lambda>>``, ``Can't pickle local object``) names
neither which argument it was nor what to do; with ``fork`` the same script ran.

What. :func:`start_workers` is ``iter(dataloader)``; when it fails with a
pickling error and workers are not forked, each argument the user gave is
pickled on its own to find the one that fails (a Dataset's attributes too, so
its ``transform`` is named), and a :class:`~hotset.errors.HotsetError` names it
with the fix. Nothing is checked on the way there: a start that succeeds costs
nothing more, and an error no argument explains is raised as it was.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

from torch.utils.data import DataLoader

from hotset.errors import HotsetError
from hotset.torch.dataset import HotsetDataset
from hotset.torch.forksafe import start_method_name
from hotset.torch.options import LoaderOptions
from hotset.warnonce import call_once_warned

__all__ = ["start_workers", "unpicklable_argument"]

#: what a failed pickle of a worker's arguments raises (a lambda: PicklingError;
#: a nested function: AttributeError; a lock or an open file: TypeError)
PICKLE_ERRORS = (pickle.PicklingError, AttributeError, TypeError)

_FIX = (
    "give a function defined at the top level of a module (a def, not a lambda or a "
    "function defined inside another; functools.partial(that_function, ...) binds "
    "arguments to it), or, where forking is safe, multiprocessing_context='fork' "
    "(not under torch.distributed on Python 3.11 before 3.11.10: hotset.torch.forksafe)"
)


def start_workers(
    dataloader: DataLoader[Any], data: HotsetDataset, options: LoaderOptions
) -> Iterator[Any]:
    """``iter(dataloader)``; a worker start that cannot pickle an argument names it."""
    try:
        # torch's own guess on a pickle error (set_start_method('fork')) cannot help a
        # DataLoader given its context, the error below says what can; its other
        # warnings (more workers than cores) are shown once per process, not per epoch
        return call_once_warned(
            lambda: iter(dataloader), ignore=("Got pickle error when attempting",)
        )
    except PICKLE_ERRORS as exc:
        method = start_method_name(dataloader.multiprocessing_context)
        if dataloader.num_workers == 0 or method == "fork":
            raise
        found = unpicklable_argument(data, options)
        if found is None:
            raise
        name, error = found
        raise HotsetError(
            f"DataLoader workers start with {_how(options, dataloader, method)}, which "
            "pickles what each worker runs, "
            f"and {name} cannot be pickled ({error}): {_FIX}"
        ) from exc


def _how(options: LoaderOptions, dataloader: DataLoader[Any], method: str) -> str:
    """Who chose the start method: the user, the loader (hotset.torch.forksafe) or Python."""
    if options.multiprocessing_context is not None:
        return f"multiprocessing_context={method!r}"
    if dataloader.multiprocessing_context is not None:
        return f"{method!r}, which the loader chose (see its warning)"
    return f"{method!r}, this Python's default start method"


def unpicklable_argument(data: HotsetDataset, options: LoaderOptions) -> tuple[str, str] | None:
    """The first argument a worker gets that does not pickle, and why; None if all do."""
    for name, value in _worker_arguments(data, options):
        error = _pickle_error(value)
        if error is None:
            continue
        if name.startswith("the Dataset"):
            attr = _unpicklable_attribute(value)
            if attr is not None:
                return f"{name}, its attribute {attr[0]!r},", attr[1]
        return name, error
    return None


def _worker_arguments(data: HotsetDataset, options: LoaderOptions) -> list[tuple[str, Any]]:
    """What the user gave that each worker receives, named as the user gave it."""
    from hotset.torch.user import ItemStore

    items = _item_store(data.store, ItemStore)
    out: list[tuple[str, Any]] = []
    if items is not None and items.read_fn is not None:
        out.append(("read= (from_dataset)", items.read_fn))
    if callable(data.decode):
        out.append(("decode=", data.decode))
    out += [
        ("transform=", data.transform),
        ("collate_fn=", options.collate_fn),
        ("collate_inputs=", options.collate_inputs),
        ("worker_init_fn=", options.worker_init_fn),
    ]
    if items is not None:
        out.append((f"the Dataset ({type(items.dataset).__name__})", items.dataset))
    out.append((f"the data set's store ({type(data.store).__name__})", data.store))
    return [(name, value) for name, value in out if value is not None]


def _item_store(store: Any, kind: type) -> Any:
    """The user's :class:`~hotset.torch.user.ItemStore` under a store's wrappers, if any."""
    for _ in range(8):  # wrappers (retries, charging) hold the store they wrap as .inner
        if isinstance(store, kind):
            return store
        store = getattr(store, "inner", None)
        if store is None:
            return None
    return None


def _pickle_error(value: Any) -> str | None:
    """Why ``value`` does not pickle, or None. Only on the error path: it copies ``value``."""
    try:
        pickle.dumps(value)
    except Exception as exc:  # what a worker's start would have raised, whatever its type
        return f"{type(exc).__name__}: {exc}"
    return None


def _unpicklable_attribute(obj: Any) -> tuple[str, str] | None:
    """The first attribute of ``obj`` that does not pickle (a Dataset's transform), if any."""
    for attr, value in getattr(obj, "__dict__", {}).items():
        error = _pickle_error(value)
        if error is not None:
            return attr, error
    return None
