"""Trace replay: load an access trace, run a policy over it, count what it cost.

A trace is a sequence of sample ids (one per line in a text file, or a 1-D
integer ``.npy``). Replaying it drives the very policy object the loader uses,
through :meth:`Policy.replay` (the fast path, equal by contract to calling
``access`` in order), so a hit ratio here is the hit ratio the real cache would
get for that order.

Sizing the cache: ``cache_items`` is an item count. ``cache_frac`` is a
fraction of the *dataset*: of its bytes when sizes are given (the dataset is
ids ``0..len(sizes)-1``), else of its items (``n`` when the caller knows it,
e.g. a sampler's dataset size, else the number of distinct ids in the trace).
"""

from __future__ import annotations

import math
import tokenize
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.counters import COUNTER_KEYS, Coverage, EpochCounts
from hotset.engine.planner import Planner
from hotset.engine.policy import Policy
from hotset.engine.roles import NeedsFuture, missing_role
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.policies.registry import make_policy, policy_class
from hotset.systems.base import System

#: the keys of the ``hotset simulate --trace ... --json`` contract, in order
RESULT_KEYS = ("policy", "requests", "hits", "misses", "hit_ratio", "bytes_read")


# -- loading ---------------------------------------------------------------------------
def _read_int_lines(path: Path, what: str) -> npt.NDArray[np.int64]:
    """One integer per non-blank line; the error names the first bad line."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise HotsetError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise HotsetError(f"{what} {path} is not a text file (or a .npy array)") from exc
    lines = text.splitlines()
    values = [line.strip() for line in lines]
    numbered = [(no, v) for no, v in enumerate(values, start=1) if v]
    try:  # fast path: numpy parses the lot at C speed
        return np.array([v for _, v in numbered], dtype=np.int64)
    except (ValueError, OverflowError):
        pass
    for no, value in numbered:
        try:
            number = int(value)
        except ValueError:
            raise HotsetError(f"{what} {path} line {no}: {value!r} is not an integer id") from None
        if not -(2**63) <= number < 2**63:
            raise HotsetError(f"{what} {path} line {no}: {value!r} does not fit in 64 bits")
    # int() accepted every line but numpy did not (e.g. "1_000"): convert one by one
    return np.array([int(v) for _, v in numbered], dtype=np.int64)


def _load_npy(path: Path, what: str) -> npt.NDArray[np.int64]:
    try:
        arr = np.load(path, allow_pickle=False)
    # a truncated, zip-looking or broken-header file fails in these too, not only OSError
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, tokenize.TokenError) as exc:
        raise HotsetError(f"cannot read {what} {path}: {exc!s:.200}") from exc
    if not isinstance(arr, np.ndarray):
        raise HotsetError(f"{what} {path} holds several arrays; expected one 1-D array")
    if arr.ndim != 1:
        raise HotsetError(f"{what} {path} must be a 1-D array, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise HotsetError(f"{what} {path} has dtype {arr.dtype}; expected an integer type")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) >= 2**63:
        raise HotsetError(f"{what} {path} has values that do not fit in int64")
    return arr.astype(np.int64)


def _load_ints(path: str | Path, what: str) -> npt.NDArray[np.int64]:
    p = Path(path)
    if not p.is_file():
        raise HotsetError(f"{what} file not found: {p}")
    arr = _load_npy(p, what) if p.suffix == ".npy" else _read_int_lines(p, what)
    if arr.size == 0:
        raise HotsetError(f"{what} {p} is empty")
    if int(arr.min()) < 0:
        where = int(np.argmax(arr < 0))
        raise HotsetError(
            f"{what} {p}: entry {where} (line {_line_of(p, where)}) is negative: {int(arr[where])}"
            if p.suffix != ".npy"
            else f"{what} {p}: entry {where} is negative: {int(arr[where])}"
        )
    return arr


def _line_of(path: Path, index: int) -> int:
    """The 1-based line number of the ``index``-th non-blank line."""
    seen = -1
    for no, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            seen += 1
            if seen == index:
                return no
    return index + 1


def load_trace(path: str | Path) -> IntArray:
    """Read a trace: one non-negative integer id per line, or a 1-D integer ``.npy``."""
    return _load_ints(path, "trace")


def load_sizes(path: str | Path, n: int | None = None) -> IntArray:
    """Read one byte size per id (ids ``0..len-1``); with ``n``, exactly ``n`` of them."""
    sizes = _load_ints(path, "sizes")
    if n is not None and len(sizes) != n:
        raise HotsetError(f"sizes file {path} has {len(sizes)} sizes but the dataset has {n} ids")
    return sizes


def save_trace(path: str | Path, trace: IntArray) -> Path:
    """Write a trace as ``.npy`` if the name ends so, else one id per line."""
    p = Path(path)
    arr = np.asarray(trace, dtype=np.int64)
    try:
        if p.suffix == ".npy":
            with p.open("wb") as fh:  # np.save(str) would append .npy to other names
                np.save(fh, arr)
        else:
            p.write_text("".join(f"{v}\n" for v in arr.tolist()))
    except OSError as exc:
        raise HotsetError(f"cannot write trace {p}: {exc.strerror or exc}") from exc
    return p


# -- sizing ------------------------------------------------------------------------------
def make_budget(
    *,
    cache_items: int | None,
    cache_frac: float | None,
    sizes: IntArray | None,
    n_items: int,
) -> Budget:
    """The budget for ``--cache-items`` or ``--cache-frac`` (exactly one of them)."""
    if (cache_items is None) == (cache_frac is None):
        raise HotsetError(
            "give exactly one of cache_items (--cache-items) or cache_frac (--cache-frac)"
        )
    if cache_items is not None:
        if isinstance(cache_items, bool) or int(cache_items) != cache_items or cache_items <= 0:
            raise HotsetError(f"--cache-items must be a positive integer, got {cache_items!r}")
        return Budget(capacity_items=int(cache_items), sizes=sizes)
    assert cache_frac is not None
    if not (isinstance(cache_frac, int | float) and 0.0 < cache_frac <= 1.0):
        raise HotsetError(f"--cache-frac must be in (0, 1], got {cache_frac!r}")
    if sizes is not None:
        total = int(np.asarray(sizes).sum())
        capacity = _fraction_of(cache_frac, total)
        if capacity <= 0:
            raise HotsetError(
                f"--cache-frac {cache_frac} of {total} bytes leaves an empty cache (0 bytes)"
            )
        return Budget(capacity_bytes=capacity, sizes=sizes)
    capacity = _fraction_of(cache_frac, n_items)
    if capacity <= 0:
        raise HotsetError(f"--cache-frac {cache_frac} of {n_items} items leaves an empty cache")
    return Budget(capacity_items=capacity)


def _fraction_of(frac: float, total: int) -> int:
    """``floor(frac * total)``, forgiving float noise (0.29 * 100 is 28.999999999999996)."""
    return min(total, math.floor(frac * total + 1e-9))


# -- replay ------------------------------------------------------------------------------
def simulate_epochs(
    epochs: Sequence[IntArray],
    policy_name: str,
    *,
    cache_items: int | None = None,
    cache_frac: float | None = None,
    sizes: IntArray | None = None,
    n: int | None = None,
    seed: int = 0,
    planned: bool = False,
    verbose: bool = False,
    layout: UnitLayout | None = None,
) -> dict[str, Any]:
    """Replay epoch after epoch through one policy, with the epoch hooks in between.

    With ``planned`` each epoch's order is handed to ``begin_epoch`` in advance
    (a sampler's order is known before the epoch; a recorded trace is not).
    Returns the six contract keys (:data:`RESULT_KEYS`); with ``verbose`` also
    ``substitutions``, ``fetched_ahead``, ``storage_requests``, ``capacity_bytes``,
    ``capacity_items`` and one row per epoch with the engine's counters
    (:data:`hotset.engine.counters.COUNTER_KEYS`), coverage, and the contract's
    names for the same numbers (``hits``, ``misses``, ``bytes_read``). The policy
    runs in the one engine (:class:`hotset.engine.planner.Planner`), one access
    per batch: a trace has no batches.
    """
    arrays = [np.asarray(e, dtype=np.int64) for e in epochs]
    trace = _checked_trace(arrays, sizes)
    cls = policy_class(policy_name)  # an unknown name fails before the sizing does
    n_items = n if n is not None else len(np.unique(trace))
    budget = make_budget(
        cache_items=cache_items, cache_frac=cache_frac, sizes=sizes, n_items=n_items
    )
    policy = _replay_policy(cls, policy_name, budget, trace, seed=seed, layout=layout)
    ids_n = len(sizes) if sizes is not None else int(trace.max()) + 1
    if layout is not None:
        ids_n = max(ids_n, len(layout.chunk_of))
    planner = _trace_planner(policy, arrays, ids_n, sizes)
    totals, per_epoch = _replay_epochs(planner, arrays, ids_n, planned=planned)
    hits = totals.exact_hits
    result: dict[str, Any] = {
        "policy": policy_name,
        "requests": len(trace),
        "hits": hits,
        "misses": totals.storage_reads,
        "hit_ratio": hits / len(trace),
        "bytes_read": totals.storage_bytes,
    }
    if verbose:
        result["substitutions"] = totals.substitutions
        result["fetched_ahead"] = totals.fetched_ahead
        result["storage_requests"] = totals.storage_requests
        result["capacity_bytes"] = budget.capacity_bytes
        result["capacity_items"] = budget.capacity_items
        result["epochs"] = per_epoch
    return result


def _checked_trace(arrays: list[IntArray], sizes: IntArray | None) -> IntArray:
    """The epochs as one trace, refused before any work when it is empty, has a negative
    id, or uses an id ``sizes`` does not cover."""
    if not arrays or sum(len(a) for a in arrays) == 0:
        raise HotsetError("the trace is empty: nothing to simulate")
    trace = np.concatenate(arrays)
    if int(trace.min()) < 0:
        raise HotsetError(f"sample ids must be non-negative, got {int(trace.min())}")
    if sizes is not None and int(trace.max()) >= len(sizes):
        raise HotsetError(
            f"sizes cover {len(sizes)} ids but the trace uses id {int(trace.max())}"
            f" (needs at least {int(trace.max()) + 1} sizes)"
        )
    return trace


def _replay_policy(
    cls: type[Policy],
    policy_name: str,
    budget: Budget,
    trace: IntArray,
    *,
    seed: int,
    layout: UnitLayout | None,
) -> Policy:
    """The named policy (of class ``cls``) over ``budget``, given the chunk layout it
    reads by and, for an offline policy (Belady), the whole trace as its future."""
    policy = make_policy(policy_name, budget, seed=seed)
    if cls.capabilities.reads_units and layout is None:
        raise HotsetError(f"policy {policy_name!r} reads whole chunks: give the chunk layout")
    policy.attach_layout(layout)
    if cls.capabilities.needs_future:
        if not isinstance(policy, NeedsFuture):
            raise missing_role(policy, "NeedsFuture", "needs_future")
        policy.set_future(trace)
    return policy


def _replay_epochs(
    planner: Planner, arrays: list[IntArray], ids_n: int, *, planned: bool
) -> tuple[EpochCounts, list[dict[str, int]]]:
    """Each epoch through the planner, with the epoch hooks between: the summed
    counters and one row per epoch (the engine's names and the contract's)."""
    per_epoch: list[dict[str, int]] = []
    totals = EpochCounts()
    coverage = Coverage(ids_n)
    for epoch, order in enumerate(arrays):
        planner.begin(epoch, announce=planned)
        c = planner.replay_epoch()
        planner.finish(val_accuracy=None)
        coverage.add(order)
        for key in COUNTER_KEYS:
            setattr(totals, key, getattr(totals, key) + getattr(c, key))
        per_epoch.append(
            {
                "epoch": epoch,
                **c.as_dict(),
                "hits": c.exact_hits,
                "misses": c.storage_reads,
                "bytes_read": c.storage_bytes,
                **coverage.close_epoch(),
            }
        )
    return totals, per_epoch


def _trace_planner(
    policy: Policy, epochs: list[IntArray], n: int, sizes: IntArray | None
) -> Planner:
    """The engine over a recorded trace: one access per batch, no feedback, no importance."""
    from hotset.importance.table import ImportanceTable
    from hotset.samplers.trace import TraceSampler

    system = System(
        name=policy.name,
        sampler=TraceSampler(epochs, n),
        policy=policy,
        table=ImportanceTable(n),
    )
    return Planner(system, n=n, batch_size=1, lag=0, sizes=sizes)


def simulate_trace(
    trace: IntArray,
    policy_name: str,
    *,
    cache_items: int | None = None,
    cache_frac: float | None = None,
    sizes: IntArray | None = None,
    seed: int = 0,
    verbose: bool = False,
) -> dict[str, Any]:
    """Replay one trace (one epoch) and return the contract object (see :data:`RESULT_KEYS`)."""
    return simulate_epochs(
        [trace],
        policy_name,
        cache_items=cache_items,
        cache_frac=cache_frac,
        sizes=sizes,
        seed=seed,
        verbose=verbose,
    )


def sampler_epochs(sampler: str, *, n: int, epochs: int, seed: int = 0) -> list[IntArray]:
    """Each epoch's order from a named sampler (only ``random`` needs no feedback)."""
    if sampler != "random":
        raise HotsetError(f"unknown sampler {sampler!r}; trace simulation supports: random")
    if isinstance(epochs, bool) or epochs < 1:
        raise HotsetError(f"--epochs must be at least 1, got {epochs!r}")
    from hotset.samplers.random import RandomSampler

    rs = RandomSampler(n, seed=seed)
    return [rs.global_order(e) for e in range(epochs)]
