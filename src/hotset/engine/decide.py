"""One batch's decisions, gathered from a policy: access by access, or in one call.

A policy that serves every request with the id itself, alone (no
substitutions, no read units, no prefetch), may decide a batch in one call,
``access_batch(ids) -> (outcomes, admitted, evictions)``: ``ids`` a list of
ints, ``outcomes`` a ``bytearray`` of ``Outcome.HIT``/``Outcome.MISS`` values,
``admitted[j]`` whether request ``j``'s id was admitted, ``evictions`` the
non-empty ``evicted`` tuples by position. It must equal calling ``access`` on
each id in order (as :meth:`Policy.replay` must); the planner then makes the
same plan without a :class:`Decision` object per request. It is used only
where the class defining it also defines the ``access`` in effect: a subclass
that overrides ``access`` alone is decided access by access.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.outcome import Outcome
from hotset.engine.policy import Policy
from hotset.errors import HotsetError

_HIT, _SUB, _MISS, _PRE = (int(o) for o in Outcome)


#: per policy class: whether its access_batch decides as its access does
_BATCH_CLASSES: dict[type, bool] = {}


def batch_access(policy: Policy) -> Callable[[list[int]], Any] | None:
    """``policy.access_batch`` if it stands for the ``access`` in effect, else None.

    Both must come from the same class: a subclass that overrides ``access``
    alone (or an instance given its own ``access``) is decided access by access.
    """
    cls = type(policy)
    ok = _BATCH_CLASSES.get(cls)
    if ok is None:
        owners = [
            next((c for c in cls.__mro__ if name in vars(c)), None)
            for name in ("access_batch", "access")
        ]
        ok = _BATCH_CLASSES[cls] = owners[0] is not None and owners[0] is owners[1]
    if not ok or "access" in vars(policy):
        return None
    fn: Callable[[list[int]], Any] = policy.access_batch  # type: ignore[attr-defined]
    return fn


@dataclass
class Decided:
    """One batch's decisions, as the planner assembles them into a plan."""

    outcomes: npt.NDArray[np.int8]
    served: IntArray
    units: IntArray  # per request (-1: the sample alone)
    admitted_flags: list[bool]  # per request: the served id was admitted
    evictions: dict[int, tuple[int, ...]] = field(default_factory=dict)  # position -> evicted
    admitted: list[int] = field(default_factory=list)  # every admission, in order
    evicted: list[int] = field(default_factory=list)  # every eviction, in order
    #: net cache operations, in decision order: id -> True if its last op was an admission
    last_op: dict[int, bool] = field(default_factory=dict)
    reads: dict[int, None] = field(default_factory=dict)  # ids read alone, in order
    unit_reads: dict[int, None] = field(default_factory=dict)  # units read, in order
    uses_units: bool = False
    #: partial unit reads: unit -> the ids (among ``reads``) one ranged request brings
    read_groups: dict[int, dict[int, None]] = field(default_factory=dict)
    #: position -> the ids its decision admitted besides the served one (fetched ahead)
    also: dict[int, tuple[int, ...]] = field(default_factory=dict)


def gather_uniform(policy: Policy, ids: IntArray) -> Decided:
    """A policy that caches nothing: every request a read of its own sample, in one replay."""
    outcomes = np.asarray(policy.replay(ids), dtype=np.int8)
    if not (outcomes == _MISS).all():
        raise HotsetError(f"policy {policy.name!r} declares it caches nothing but answered a hit")
    return Decided(
        outcomes=outcomes,
        served=ids.copy(),
        units=np.full(len(ids), -1, dtype=np.int64),
        admitted_flags=[False] * len(ids),
        reads=dict.fromkeys(ids.tolist()),
    )


def gather(policy: Policy, ids: IntArray) -> Decided:
    """The decisions of one batch of requests ``ids``, in order."""
    id_list: list[int] = ids.tolist()
    whole_batch = batch_access(policy)
    if whole_batch is not None:
        return _gather_batch(policy.name, whole_batch, ids, id_list)
    return _gather(policy.name, policy.access, id_list)


def _gather(policy: str, access: Any, id_list: list[int]) -> Decided:
    """One ``access`` per request, in order, and what the batch's decisions add up to."""
    decisions = [access(sid) for sid in id_list]
    out_list = [d.outcome for d in decisions]
    served_list = [d.served for d in decisions]
    unit_list = [d.unit for d in decisions]
    got = Decided(
        outcomes=np.array(out_list, dtype=np.int8),
        served=np.array(served_list, dtype=np.int64),
        units=np.array(unit_list, dtype=np.int64),
        admitted_flags=[d.admitted for d in decisions],
    )
    last_op, evictions, admitted, evicted, also = (
        got.last_op,
        got.evictions,
        got.admitted,
        got.evicted,
        got.also,
    )
    for j, d in enumerate(decisions):
        gone = d.evicted
        if gone:
            evictions[j] = gone
            evicted += gone
            for e in gone:
                last_op[e] = False
        if d.admitted:
            admitted.append(d.served)
            last_op[d.served] = True
        if d.also_admitted:
            also[j] = d.also_admitted
            for a in d.also_admitted:
                admitted.append(a)
                last_op[a] = True
    got.uses_units = max(unit_list, default=-1) >= 0
    if not got.uses_units:
        pairs = zip(served_list, out_list, strict=True)
        got.reads = dict.fromkeys([s for s, o in pairs if o == _MISS])
        if _PRE in out_list:
            _unitless_prefetch(policy, id_list[out_list.index(_PRE)])
        if max([d.group for d in decisions], default=-1) >= 0:
            _group_reads(policy, decisions, got)
        return got
    reads, unit_reads = got.reads, got.unit_reads
    for j, o in enumerate(out_list):
        if o == _MISS:
            if unit_list[j] < 0:
                reads[served_list[j]] = None
            else:
                unit_reads[unit_list[j]] = None
        elif o == _PRE and unit_list[j] < 0:
            _unitless_prefetch(policy, id_list[j])
    if max([d.group for d in decisions], default=-1) >= 0:
        _group_reads(policy, decisions, got)
    return got


def _group_reads(policy: str, decisions: list[Any], got: Decided) -> None:
    """Partial unit reads (``Decision.group``): the ids each ranged request brings.

    Every id is also a single read of the batch (``reads``), so the cache sees
    samples; requests that name the same unit in one batch share one request, and
    an id both read alone and in a group is read once, in the group.
    """
    reads, groups = got.reads, got.read_groups
    for d in decisions:
        g = d.group
        if g < 0:
            continue
        if d.outcome != _MISS or d.unit >= 0:
            raise HotsetError(
                f"policy {policy!r}: id {d.requested} names group {g}, which only a miss of "
                "the sample alone (unit -1) may"
            )
        ids = groups.setdefault(g, {})
        for sid in (d.served, *d.also_admitted):
            ids[sid] = None
            reads[sid] = None


def _gather_batch(policy: str, access_batch: Any, ids: IntArray, id_list: list[int]) -> Decided:
    """The batch's decisions from one ``access_batch`` call (see the module docstring)."""
    out, flags, evictions = access_batch(id_list)
    m = len(id_list)
    if len(out) != m or len(flags) != m or out.count(_SUB) or out.count(_PRE):
        raise HotsetError(
            f"policy {policy!r}: access_batch must answer each request with a hit or a "
            "miss of the id itself"
        )
    got = Decided(
        outcomes=np.frombuffer(out, dtype=np.int8).copy(),
        served=ids.copy(),
        units=np.full(m, -1, dtype=np.int64),
        admitted_flags=flags,
        evictions=evictions,
        reads=dict.fromkeys([s for s, o in zip(id_list, out, strict=True) if o == _MISS]),
    )
    last_op, admitted, evicted = got.last_op, got.admitted, got.evicted
    for j, sid in enumerate(id_list):
        gone = evictions.get(j)
        if gone:
            evicted += gone
            for e in gone:
                last_op[e] = False
        if flags[j]:
            admitted.append(sid)
            last_op[sid] = True
    return got


def _unitless_prefetch(policy: str, sid: int) -> None:
    raise HotsetError(
        f"policy {policy!r}: id {sid} was served from a prefetch "
        "without naming the unit that holds it"
    )
