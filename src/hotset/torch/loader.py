"""The real loader: a PyTorch DataLoader whose order and cache a hotset System decides.

Usage (see ``hotset.loader``)::

    data = hotset.open_dataset("file:///data/train", decode="image", transform=tf)
    loader = hotset.loader(data, system="shade", cache="2gb", batch_size=256, num_workers=8)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for x, y, ids, w in loader:
            loss = F.cross_entropy(model(x), y, reduction="none")
            loader.update(ids, loss.detach())
            (loss * w).mean().backward()
    ckpt["data"] = loader.state_dict()

How it is built, and why:

* **One place for the options** (:mod:`hotset.torch.options`): every option's
  type, default and check; **one builder** (:mod:`hotset.torch.builder`) that
  assembles the parts below from them. This module only iterates, reports and
  checkpoints (:mod:`hotset.torch.checkpoint`).
* **One planner, in the main process.** The DataLoader gets a sampler whose
  items are whole :class:`~hotset.engine.plan.BatchPlan` objects
  (``batch_size=None``: automatic batching off), made lazily as the DataLoader
  asks for the next index (:mod:`hotset.torch.plansampler`), so every policy
  call happens in one place and in a fixed order. Feedback is applied with the
  fixed lag ``num_workers * prefetch_factor`` (see :mod:`hotset.engine.planner`),
  so the decisions are those a simulator loop with the same lag makes.
* **Workers move bytes only** (:mod:`hotset.torch.fetch`), and apply cache
  writes in plan order (:mod:`hotset.torch.sequencer`).
* **Read-ahead over the whole epoch** (:mod:`hotset.torch.readahead`): the
  DataLoader looks only ``num_workers * prefetch_factor`` batches ahead, so the
  main process also reads the epoch's not-yet-cached ids ahead, in order, into
  a staging area of ``readahead_bytes`` (default 64 MiB, outside the cache
  budget; 0 turns it off; off by default for systems that substitute misses;
  idle in an epoch where most ids are uncached), and attaches them to the plans
  that need them. Its reads are storage reads and are counted as such
  (``readahead_reads``; ``readahead_wasted`` for those nothing used).
* **No torch internals are touched**: a stock DataLoader with a custom sampler,
  dataset and collate function; pin_memory, persistent_workers, timeouts and
  multiprocessing contexts are the DataLoader's own. Workers started from a fork
  server or spawn are kept across epochs unless ``persistent_workers=False``
  (:func:`hotset.torch.forksafe.keeps_workers`): everything an epoch tells them
  travels in its plans and in memory shared since their start (the write
  sequencer, the cache), so kept workers execute exactly what fresh ones would;
  they are reseeded each epoch as DataLoader seeds fresh ones, with the one torch
  function this package borrows, DataLoader's numpy seed mix
  (:mod:`hotset.torch.workerseed`).

Epoch life cycle (docs/usage.md, "Epochs"): an epoch begins when the first
batch is asked of an iterator (its first ``next``), not at ``iter(loader)``: an
iterator made and discarded, or closed before its first batch, consumes no
epoch and changes no decision. Beginning an epoch first closes the previous one
(remaining feedback applied, ``system.end_epoch`` called with the mean training
loss and the accuracy given to :meth:`HotsetLoader.record_validation`). Its
number is the one ``set_epoch`` gave before that first batch, else the previous
epoch's plus one. An epoch abandoned midway (a ``break``) is closed the same way
when the next one begins; making a new iterator stops the old one, and plans
its workers never executed are abandoned, their evictions applied to the cache
and their admissions rebuilt lazily.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
import threading
import time
import warnings
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from hotset.cachestore.base import CacheStore
from hotset.engine.counters import Coverage
from hotset.engine.feedback import Feedback
from hotset.engine.plan import EpochLog
from hotset.engine.roles import Evaluates
from hotset.errors import HotsetError, WorkerDied
from hotset.importance.table import as_ids, as_values
from hotset.systems.base import System
from hotset.torch.batches import shape_batch
from hotset.torch.builder import LoaderParts, as_hotset_dataset, build
from hotset.torch.checkpoint import STATE_VERSION, Checkpoints, load_system_state, system_state
from hotset.torch.cursor import EpochCursor
from hotset.torch.dataset import HotsetDataset
from hotset.torch.dlkeywords import describe_dataloader_keywords
from hotset.torch.fetch import BACKEND_ERRORS
from hotset.torch.options import (
    DEFAULT_CACHE,
    DEFAULT_READAHEAD_BYTES,
    LoaderOptions,
    describe_options,
)
from hotset.torch.picklehint import start_workers
from hotset.torch.ranks import active_world, gather_evaluated, merge_epoch
from hotset.torch.report import EpochStats
from hotset.torch.state import check_epoch
from hotset.torch.workerdeath import WorkerWatch, guard_sigchld, looks_like_death
from hotset.torch.workerseed import draw_base_seed

__all__ = [
    "DEFAULT_CACHE",
    "DEFAULT_READAHEAD_BYTES",
    "STATE_VERSION",
    "HotsetLoader",
    "LoaderOptions",
    "as_hotset_dataset",
    "load_system_state",
    "loader",
    "system_state",
]

#: whether an error says a DataLoader worker died, by its message (hotset.torch.workerdeath)
_worker_died = looks_like_death


def _pins_memory() -> bool:
    """Whether a DataLoader given ``pin_memory=True`` pins here: with an accelerator,
    not Apple's (torch's own rule, ``_BaseDataLoaderIter``)."""
    if not torch.accelerator.is_available():
        return False
    device = torch.accelerator.current_accelerator()
    return device is None or device.type != "mps"


class HotsetLoader(Checkpoints):
    """An iterable of ``(x, y, ids, w)`` batches (``batch=`` gives ``(x, y)`` or a dict);
    see the module docstring and :func:`loader`.

    ``options`` are :class:`~hotset.torch.options.LoaderOptions`' fields, by name.
    """

    def __init__(self, data: HotsetDataset | Any, **options: Any) -> None:
        #: the options, checked (hotset.torch.options)
        self.options = LoaderOptions.from_kwargs(options)
        #: rank= or world_size= given (not taken from torch.distributed): bind_ranks refuses
        self._ranks_given = self.options.rank is not None or self.options.world_size is not None
        #: what the user gave: a HotsetDataset, or their own map-style Dataset
        self.dataset = data
        self._adopt(build(data, self.options))
        opts = self.options
        self.batch_size = opts.batch_size
        self.num_workers = opts.num_workers
        self.seed = opts.seed
        self.lag = opts.lag
        self.progress = opts.progress
        #: on_error="skip": id -> why its read failed, for every sample skipped so far
        self._skipped: dict[int, str] = {}
        #: evaluate_with(fn): the forward pass of samples a system re-evaluates
        self._evaluator: Callable[[Any, Any, Any], Any] | None = None
        self._warned_evaluate = False
        #: samples evaluate_with read from storage because the cache did not hold them
        self.evaluate_reads = 0
        self._init_epochs(len(self.data.manifest))

    def _adopt(self, parts: LoaderParts) -> None:
        """Hold the parts the builder assembled (hotset.torch.builder says what each is)."""
        self.data: HotsetDataset = parts.data
        #: the options with ``system="auto"`` resolved; ``choice`` says what auto picked
        self.options = parts.options
        self.choice = parts.choice
        self.system: System = parts.system
        self.rank, self.world_size = parts.rank, parts.world_size
        self.multiprocessing_context = parts.multiprocessing_context
        self.capacity_bytes = parts.capacity_bytes
        self.cache: CacheStore | None = parts.cache
        #: the rest of what the builder assembled, held as one object (the session, the
        #: planner, the fetcher, the threads, the DataLoader and the links to other jobs)
        self._parts = parts
        self._pin_labels = self.options.pin_memory and _pins_memory()
        #: iter() calls on ``_dataloader``: after the first, kept workers are reseeded
        self._dataloader_iters = 0
        #: the running iteration's workers, and a death noticed among them
        self._watch = WorkerWatch(None)

    def _init_epochs(self, n: int) -> None:
        """No epoch begun yet: the bookkeeping an epoch fills and a checkpoint saves."""
        self._coverage = Coverage(n)
        #: where the loop is in its epochs (what a checkpoint saves of its position)
        self._cursor = EpochCursor(n)
        self._start_state: dict[str, Any] | None = None
        self._history: list[EpochStats] = []
        self._current: EpochStats | None = None
        self._gen: Generator[Any, None, None] | None = None
        #: the ids of the batch the current iterator yielded last (see last_ids)
        self._last_ids: Any = None

    # -- the user API ---------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """The number of the next epoch to begin (orders are keyed by it).

        An epoch begins at an iterator's first batch, so this may come before or
        after ``iter(loader)`` as long as it comes before that batch (Lightning
        makes the epoch's iterator before its epoch-start hooks run).
        """
        self._cursor.name_next(check_epoch("epoch", epoch))

    def __len__(self) -> int:
        """Batches the current epoch yields, or the next one will, on this rank.

        Before an epoch the count is predicted from how the system's sampler
        shards: ranks get ``ceil(n / world_size)`` ids (padded by wrapping, as
        torch's DistributedSampler does), or ``n // world_size`` when the sampler
        drops the remainder; a recorded trace has its own length per epoch. The
        last partial batch counts unless ``drop_last``.
        """
        cursor = self._cursor
        if cursor.status == "running":
            return self._parts.planner.n_batches
        from hotset.samplers.pads import PADSSampler
        from hotset.samplers.shard import shard_len
        from hotset.samplers.trace import TraceSampler

        sampler = self.system.sampler
        n = len(self.data.manifest)
        # "finished" closes at the next epoch's first batch, which runs set_epoch's or the next
        epoch = (
            cursor.next_epoch
            if cursor.status == "idle" or cursor.epoch_set
            else self._parts.planner.epoch + 1
        )
        if isinstance(sampler, TraceSampler) and 0 <= epoch < len(sampler.epochs):
            ids = len(sampler.epochs[epoch])
        elif isinstance(sampler, PADSSampler):
            ids = sampler.per_rank_length(self.world_size)
        else:
            drop = bool(getattr(sampler, "drop_last", False))
            ids = shard_len(n, self.world_size, drop_last=drop)
        full, rest = divmod(ids, self.batch_size)
        return full + (1 if rest and not self._parts.planner.drop_last else 0)

    def __iter__(self) -> Iterator[Any]:
        """A new iterator over an epoch, which begins only at its first batch.

        Creating it stops the previous iterator and does nothing else: the epoch
        (closing the previous one, beginning this one) starts when the first batch
        is asked for, so an iterator made and discarded (Lightning makes one to
        check the loader) or closed before its first batch consumes no epoch.
        """
        if self._parts.dataloader is None:
            raise HotsetError("the loader is closed")
        self._stop_iteration(keep_unstarted=False)
        self._gen = self._run()
        return self._gen

    def _enter_epoch(self) -> None:
        """At an iterator's first batch: close the epoch before it, begin its own.

        A resumed epoch goes on instead, unless ``set_epoch`` named another one.
        """
        cursor = self._cursor
        if cursor.resumed and cursor.in_epoch:
            cursor.resumed = False
            moved_on = cursor.epoch_set and cursor.next_epoch != self._parts.planner.epoch
            if cursor.status == "finished" or moved_on:
                self._close_epoch()
        elif cursor.in_epoch:
            self._close_epoch()
        if cursor.status == "idle":
            # the board's placement, before the start state (a resumed epoch has its own)
            self._parts.coordination.before_epoch(cursor.next_epoch)
            self._begin_epoch(cursor.next_epoch)
        self._abandon_unwritten(clear=False)

    @property
    def last_ids(self) -> Any:
        """The sample ids (an int64 tensor) of the batch the loader yielded last.

        For ``batch="xy"``, whose batches carry no ids:
        ``loader.update(loader.last_ids, loss)``. Exact in a loop that trains each
        batch before asking for the next, with or without DataLoader workers: the
        loader yields batches in their planned order from the main process, and
        this is set as each one is yielded. A wrapper that fetches batches ahead of
        the step (Lightning, a device prefetcher) has moved on by then: there use
        ``batch="dict"`` or the default, whose batches carry their ids.
        """
        if self._last_ids is None:
            raise HotsetError(
                "last_ids: no batch yielded yet by this iterator; read it after the loop "
                "received a batch"
            )
        return self._last_ids

    def update(self, ids: Any, losses: Any) -> None:
        """Per-sample losses of a batch, keyed by the ids the loader yielded with it
        (``loader.last_ids`` with ``batch="xy"``)."""
        if self._cursor.status == "idle":
            raise HotsetError("update: no epoch in progress; iterate the loader first")
        if getattr(losses, "ndim", None) == 0 or isinstance(losses, int | float):
            raise HotsetError(
                "update: losses must hold one loss per sample (shape (batch,)), got a single "
                "number: compute the loss with reduction='none', e.g. "
                "F.cross_entropy(out, y, reduction='none'), and take .mean() for backward()"
            )
        id_arr = as_ids(ids, what="update ids")
        loss_arr = as_values(losses, len(id_arr), id_arr, what="update losses")
        if len(loss_arr) and loss_arr.min() < 0:
            i = int(np.argmin(loss_arr))
            raise HotsetError(
                f"update losses: value {float(loss_arr[i])!r} for sample id {int(id_arr[i])} is "
                "negative: give one loss >= 0 per sample, e.g. "
                "F.cross_entropy(out, y, reduction='none')"
            )
        self._cursor.answer(id_arr, self._parts.planner.epoch)
        self._parts.planner.give(self._cursor.yielded - 1, id_arr.copy(), loss_arr.copy())

    def record_validation(self, accuracy: float) -> None:
        """Validation accuracy of the epoch just iterated (samplers may switch modes on it)."""
        if isinstance(accuracy, bool) or not isinstance(accuracy, int | float):
            raise HotsetError(f"accuracy must be a number, got {accuracy!r}")
        if not math.isfinite(accuracy):
            raise HotsetError(f"accuracy must be finite, got {accuracy!r}")
        if self._cursor.status == "idle":
            raise HotsetError("record_validation: no epoch to attach it to")
        self._cursor.pending_val = float(accuracy)

    def summary(self) -> str:
        """The report as a table to print: the system as a spec with every option it was
        given (``system quiver[probe=10]``), then one line per epoch, what people read.
        A system whose sampler guards against training a subset says so on a ``guard``
        line after the spec (SHADE's default coverage floor, with its opt-out).

        Hits next to coverage (distinct samples trained), the training loss and
        validation accuracy the loop gave (``update``, ``record_validation``),
        stall and throughput.
        """
        from hotset.torch.report import summary_table

        table = summary_table(
            self.report(), train_loss=self.system.train_loss, val_accuracy=self.system.val_accuracy
        )
        head = f"system {self.options.system_spec}"  # its options too
        if self.choice is not None:
            head = f"system {self.choice.describe()}"
        note = getattr(self.system.sampler, "guard_note", None)
        guard = note() if callable(note) else None  # a guard on by default shows (SHADE's floor)
        return f"{head}\nguard {guard}\n{table}" if guard else f"{head}\n{table}"

    def report(self) -> list[dict[str, Any]]:
        """One row per epoch (the current one too): counts, stall and throughput."""
        rows = [s.row() for s in self._history]
        if self._current is not None:
            rows.append({**self._current.row(), **self._coverage.peek()})
        return rows

    def policy_summary(self) -> dict[str, Any]:
        """What the system's policy says of its own choices so far (JSON-ready).

        The same dictionary the simulator reports as ``policy``: Quiver's chunks and
        how far samples moved from their planned places, iCACHE's packages, ...;
        plus, once a package file could not be written, what became of them
        (``package_write_errors``, ``package_fallback_reads``: hotset.torch.packing).
        """
        return {**self.system.policy.summary(), **self._parts.packages.summary()}

    @property
    def namespace(self) -> str | None:
        """The cache's Redis namespace (``<key>@<data set identity>`` when shared,
        ``<key>@content`` with a digest, a private one otherwise; keys are
        ``hotset:<namespace>:...``); None without one."""
        return None if self._parts.session is None else self._parts.session.namespace

    def evaluate_with(self, fn: Callable[[Any, Any, Any], Any] | None) -> None:
        """Give the forward pass a system that re-evaluates samples uses (ImPACT's set S).

        Before each epoch's draw the loader hands ``fn(x, y, ids)`` the samples the
        system names, in batches built as training batches are, and ``fn`` returns
        one loss per sample (e.g. ``criterion(model(x), y)`` with ``reduction="none"``
        under ``torch.no_grad()``). Their bytes come from the cache; a sample the
        cache does not hold is read from storage and counted (``evaluate_reads``).
        ``None`` stops it. Under torch.distributed each rank evaluates its own part
        (ImPACT's S is split between the ranks) and the losses are gathered to every
        rank with a collective before the draw: give it on every rank or on none.
        """
        if fn is not None and not callable(fn):
            raise HotsetError(f"evaluate_with: fn must be callable or None, got {fn!r}")
        self._evaluator = fn

    def _evaluate(self, ids: np.ndarray) -> np.ndarray:
        """One loss per id from the user's forward pass over their cached bytes."""
        import torch

        assert self._evaluator is not None
        fetcher = self._parts.fetcher
        keys = [fetcher.key_of(int(s)) for s in ids.tolist()]
        got = self.cache.get_many(keys) if self.cache is not None else [None] * len(keys)
        losses: list[np.ndarray] = []
        for start in range(0, len(ids), self.batch_size):
            part = ids[start : start + self.batch_size].tolist()
            blobs = []
            for j, sid in enumerate(part, start=start):
                blob = got[j]
                if blob is None:
                    blob = fetcher.reader.read_checked(sid)
                    self.evaluate_reads += 1
                blobs.append(blob)
            x, y = fetcher.collate(
                [fetcher.decode_one(b, s) for b, s in zip(blobs, part, strict=True)],
                fetcher.labels[part],
            )
            y = torch.from_numpy(y) if isinstance(y, np.ndarray) else y
            out = self._evaluator(x, y, torch.as_tensor(part, dtype=torch.int64))
            values = out.detach().cpu().numpy() if isinstance(out, torch.Tensor) else out
            losses.append(np.asarray(values, dtype=np.float64).reshape(-1))
        return np.concatenate(losses) if losses else np.zeros(0, dtype=np.float64)

    def decisions(self) -> EpochLog:
        """Every decision of the current (or last) epoch, in planning order."""
        return self._parts.planner.log

    def batch_seconds(self) -> list[float]:
        """Mini-batch times of the current (or last) epoch: seconds between yields.

        A batch's time holds the training step that came before it and the wait
        for its data, which is what a cache changes; the first also holds the
        workers' start. Quiver's probe compares the batches a system planned
        without the cache with the next ones (``quiver[probe=N]``;
        :func:`hotset.policies.quiver.placement.probe_result`).
        """
        return list(self._cursor.batch_seconds)

    def bind_ranks(self, rank: int, world_size: int) -> None:
        """Rebuild the loader for ``rank`` of ``world_size`` ranks, before its first epoch.

        A loader takes its rank and world size from ``torch.distributed`` when it
        is built. One built before the process group exists (Lightning starts its
        DDP processes inside ``trainer.fit``, after the script built the loader)
        took rank 0 of 1 and would train every rank on the whole data set; this
        rebuilds its parts (cache, planner, DataLoader) for the ranks it really
        runs in, as Lightning re-creates a DataLoader with a DistributedSampler.
        Nothing to do when they already match. Refused once an epoch has begun,
        or when ``rank=``/``world_size=`` were given explicitly and differ.
        """
        for name, value in (("rank", rank), ("world_size", world_size)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise HotsetError(f"bind_ranks: {name} must be an int, got {value!r}")
        if not 0 <= rank < world_size:
            raise HotsetError(
                f"bind_ranks: rank {rank} of world_size {world_size}: need 0 <= rank < world_size"
            )
        if (rank, world_size) == (self.rank, self.world_size):
            return
        if self._cursor.status != "idle" or self._history or self._cursor.resumed:
            raise HotsetError(
                f"bind_ranks: the loader has already run epochs as rank {self.rank} of "
                f"{self.world_size}; build it before training, or with rank={rank}, "
                f"world_size={world_size}"
            )
        if self._ranks_given:
            raise HotsetError(
                f"the loader was built with rank={self.rank}, world_size={self.world_size}, "
                f"but it runs as rank {rank} of {world_size}: give the ranks it runs in, "
                "or leave both out"
            )
        if self._parts.dataloader is None:
            raise HotsetError("the loader is closed")
        options = dataclasses.replace(self.options, rank=rank, world_size=world_size)
        self._release()
        self._adopt(build(self.data, options))  # the data set as adapted (packed) already
        self.options = options
        self._init_epochs(len(self.data.manifest))

    def close(self) -> None:
        """Stop workers and release the cache (the embedded one is unlinked)."""
        self._release()

    def _release(self) -> None:
        """What close() does: workers, threads, package files, the cache session."""
        self._stop_iteration(keep_unstarted=False)
        self._parts.readahead.stop()
        self._parts.prefetcher.stop()
        self._parts.dataloader = None  # persistent workers shut down with their iterator
        self._parts.packages.remove()  # this run's package files
        self._parts.fetcher.close()
        self._parts.coordination.leave(self.cache, self._parts.fetcher.key_of)
        if self.cache is not None:
            assert self._parts.session is not None
            self._parts.session.close()  # a private namespace is dropped, a shared one kept

    def __enter__(self) -> HotsetLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- epochs ---------------------------------------------------------------------
    def _begin_epoch(self, epoch: int) -> None:
        self._parts.planner.evaluated = 0
        if self.system.capabilities.evaluates:
            if self._evaluator is not None:
                shared = active_world(self.world_size)
                self._parts.planner.evaluate(
                    epoch,
                    self._evaluate,
                    rank=self.rank,
                    world_size=self.world_size,
                    share=gather_evaluated if shared else None,
                )
            elif (
                isinstance(policy := self.system.policy, Evaluates)
                and len(policy.to_evaluate())
                and not self._warned_evaluate
            ):
                self._warned_evaluate = True
                warnings.warn(
                    f"system {self.system.name!r} re-evaluates some samples before each epoch, "
                    "but no evaluator was given: call loader.evaluate_with(fn), fn(x, y, ids) "
                    "returning one loss per sample from a forward pass; until then they keep "
                    "their historical losses",
                    stacklevel=4,  # the training loop (<- _enter_epoch <- _run <- for)
                )
        self._parts.coordination.epoch_starts()  # where the shared chunk cycle is: in the state
        # after the evaluation: a resumed epoch restores its losses and draws the same order
        self._start_state = system_state(self.system)
        self._parts.planner.begin(epoch, rank=self.rank, world_size=self.world_size)
        self._cursor.begin()
        self._current = EpochStats(epoch)
        self._current.order = str(getattr(self.system.sampler, "last_mode", ""))

    def _close_epoch(self) -> None:
        cursor = self._cursor
        if cursor.updates == 0 and cursor.yielded and self.system.capabilities.learns:
            # Without this the system fails later, on its own terms (a NaN training loss).
            raise HotsetError(
                f"system {self.system.name!r} learns from per-sample losses, but epoch "
                f"{self._parts.planner.epoch} got none: after each step call "
                "loader.update(ids, loss) with loss = criterion(output, y) computed with "
                "reduction='none' (one loss per sample); or pick a system that does not learn "
                "(lru, minio, pytorch)"
            )
        self._finish_epoch()
        # §III-D: the jobs' benefit and RIV, at the boundary; timed from the epoch's
        # first batch, or not at all (resumed mid-epoch)
        self._parts.coordination.epoch_closed(cursor.timed_whole())
        if self._current is not None:
            self._current.coverage = self._coverage.close_epoch()
            self._history.append(self._current)
            self._current = None
        cursor.close(self._parts.planner.epoch)

    def _finish_epoch(self) -> None:
        """Close the epoch in the system; under DDP with a learning system every rank's
        feedback is shared first (:mod:`hotset.torch.ranks`)."""
        planner = self._parts.planner
        start = self._start_state
        share = None
        if self.system.capabilities.learns and start is not None and active_world(self.world_size):

            def share(log: list[Feedback], val: float | None) -> tuple[float, float | None]:
                return merge_epoch(
                    self.system,
                    log,
                    start_table=start["table"],
                    epoch=planner.epoch,
                    val_accuracy=val,
                )

        planner.finish(val_accuracy=self._cursor.pending_val, share=share)

    def _stop_iteration(self, *, keep_unstarted: bool = True) -> None:
        """Stop the current iterator (its DataLoader iterator and read-ahead).

        One that has not yielded yet ran nothing, and is kept unless told
        otherwise: a state loaded between ``iter()`` and the first batch is the one
        that iterator goes on from (Lightning makes its iterator, then a callback
        restores the loader). A new iterator or ``close`` stops it too.
        """
        gen = self._gen
        if gen is None:
            return
        if keep_unstarted and inspect.getgeneratorstate(gen) == inspect.GEN_CREATED:
            return
        self._gen = None
        # Abandon first: a worker waiting for a batch that will never be written
        # then stops at once, instead of holding up the DataLoader's shutdown.
        self._abandon_unwritten(clear=False)
        with contextlib.suppress(Exception):
            gen.close()

    def _abandon_unwritten(self, *, clear: bool) -> None:
        """Plans made but never executed will not be: stop them and repair the cache."""
        seq = self._parts.sequencer
        planner = self._parts.planner
        if not clear and seq.written_upto >= planner.seq:
            planner.confirm(seq.written_upto)
            return
        with seq.abandoning() as written:
            planner.generation = seq.generation
            if self.cache is not None:
                if clear:
                    self._forget_cache_contents()
                else:
                    dead = [d for s, d in planner.unconfirmed.items() if s > written]
                    if dead:
                        ids = np.unique(np.concatenate(dead)).tolist()
                        try:
                            self.cache.delete_many([self._parts.fetcher.key_of(i) for i in ids])
                        except BACKEND_ERRORS:
                            # unreachable now: a put later refused over budget clears it
                            self._parts.fetcher.note_leftovers()
            seq.set_written(planner.seq)
        planner.unconfirmed.clear()

    def _forget_cache_contents(self) -> None:
        """After a resume: the cache may hold what the restored policy does not.

        A private namespace is cleared. A shared one is left alone (other jobs read
        it): entries the policy does not know only take shared budget, and a put
        they crowd out is skipped and counted. A cache that cannot be reached now is
        not cleared either; the fetcher is told that the cache may hold leftovers,
        so a put refused over budget later clears it instead of failing.
        """
        assert self.cache is not None and self._parts.session is not None
        if self._parts.session.shared:
            return
        try:
            self.cache.clear()
        except BACKEND_ERRORS:
            self._parts.fetcher.note_leftovers()

    def _note_skipped(self, errors: Mapping[int, str]) -> None:
        """Keep the errors of skipped samples; warn on the first skip of an epoch."""
        first = self._current is not None and self._current.counts["skipped"] == len(errors)
        self._skipped.update(errors)
        if first:
            sid, why = next(iter(errors.items()))
            warnings.warn(
                f"hotset: skipping samples whose reads failed (on_error='skip'), "
                f"first id {sid}: {why}; loader.skipped() lists them, "
                "report()'s 'skipped' counts them",
                RuntimeWarning,
                stacklevel=4,  # the training loop's frame (<- _account <- _run <- for)
            )

    def skipped(self) -> dict[int, str]:
        """Every sample skipped so far (``on_error="skip"``): id -> why its read failed."""
        return dict(self._skipped)

    # -- the epoch's loop -------------------------------------------------------------
    def _run(self) -> Generator[Any, None, None]:
        # a generator: nothing below runs before the first batch is asked for
        self._enter_epoch()
        stats = self._current
        assert stats is not None and self._parts.dataloader is not None
        it = self._start(stats, self._parts.dataloader)
        bar = self._progress_bar()
        wall_start = time.perf_counter() - stats.wall_seconds
        last_yield = time.perf_counter()
        self._last_ids = None
        shape = self.options.batch
        try:
            while True:
                t0 = time.perf_counter()
                batch = self._next_batch(it)
                if batch is None:
                    break
                x, y_a, ids_a, w_a, info = batch
                if self._parts.vision is not None:  # the device path's decode counts as waiting
                    x = self._parts.vision.finish(
                        x, [self._parts.fetcher.keys[i] for i in ids_a.tolist()]
                    )
                stall = time.perf_counter() - t0
                served = self._account(stats, info, ids_a, w_a, stall)
                y, ids, w = self._small_tensors(y_a, ids_a, w_a)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(hit=f"{stats.row()['exact_hit_ratio']:.3f}")
                stats.wall_seconds = time.perf_counter() - wall_start
                if len(served) == 0:
                    continue  # on_error="skip" left nothing of it: no empty batch to train on
                now = time.perf_counter()
                cursor = self._cursor
                cursor.batch_seconds.append(now - last_yield)
                last_yield = now
                if cursor.yielded == len(cursor.batch_seconds):  # not in a resumed epoch
                    self._parts.coordination.batch_done(cursor.batch_seconds)
                self._last_ids = ids
                yield shape_batch(shape, x, y, ids, w)
            stats.wall_seconds = time.perf_counter() - wall_start
            stats.finished = True
            self._cursor.status = "finished"
        finally:
            self._parts.readahead.stop()
            self._parts.prefetcher.stop()
            stats.absorb(self._parts.readahead.counts, self._parts.prefetcher.counts)
            if bar is not None:
                bar.close()
            del it  # non-persistent workers shut down here

    def _small_tensors(
        self, y: np.ndarray, ids: np.ndarray, w: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A batch's labels, ids and weights as tensors: workers send them as arrays
        (:mod:`hotset.torch.fetch`, step 4), so the labels are pinned here when the
        DataLoader pins what it hands over (``pin_memory`` on an accelerator, as its
        own rule says)."""
        # a collate_fn may have made y itself (a tensor: one-hot, mixed-up labels)
        y_t = torch.from_numpy(y) if isinstance(y, np.ndarray) else torch.as_tensor(y)
        if self._pin_labels:
            y_t = y_t.pin_memory()
        return y_t, torch.from_numpy(ids), torch.from_numpy(w)

    def _start(self, stats: EpochStats, dataloader: DataLoader[Any]) -> Iterator[Any]:
        """The DataLoader's iterator for this epoch (its workers started), read-ahead running."""
        # Before iter(): with workers it already plans (and prefetches) the first batches.
        stats.baseline(self._parts.readahead.counts, self._parts.prefetcher.counts)
        self._parts.worker_init.from_main_thread = (
            threading.current_thread() is threading.main_thread()
        )
        self._parts.packages.restart()  # plans are handed out afresh from here, in order
        it = self._iter_workers(dataloader)
        # Only now: workers are forked by iter(), and no read-ahead thread may run then.
        planner = self._parts.planner
        self._parts.readahead.start(
            planner.order,
            begin=planner.planned * self.batch_size,
            skip=self.system.policy.resident(),
        )
        return it

    def _iter_workers(self, dataloader: DataLoader[Any]) -> Iterator[Any]:
        """``iter(dataloader)``: its workers started, or kept ones told a new epoch begins.

        A kept worker that died while idle between epochs (the out-of-memory killer)
        is replaced before the epoch asks anything of it; one whose death shows only
        when iter() fails is replaced then. Either way fresh workers start the epoch,
        as they would have without keeping. The workers are watched from here
        (:mod:`hotset.torch.workerdeath`).
        """
        # A kept worker killed holding the lock of the iterator's "workers done" event
        # (every worker polls it) would hang iter() itself: torch's reset finds the
        # death and marks the worker unavailable, which reads that event. The lock is
        # tried first (at once when free) and, if held, the iterator is given an event
        # of its own and replaced, whether or not the death is known yet.
        if dataloader.persistent_workers and (self._watch.unblock_shutdown() or self._watch.dead()):
            self._renew_kept_workers()
            assert self._parts.dataloader is not None
            dataloader = self._parts.dataloader
        self._seed_kept_workers(dataloader)
        try:
            it = start_workers(dataloader, self.data, self.options)  # names an unpicklable one
        except Exception as exc:
            if not (dataloader.persistent_workers and self._watch.death_of(exc)):
                raise
            self._watch.unblock_shutdown()
            self._renew_kept_workers()
            assert self._parts.dataloader is not None
            self._seed_kept_workers(self._parts.dataloader)
            it = start_workers(self._parts.dataloader, self.data, self.options)
        self._dataloader_iters += 1
        self._watch = WorkerWatch(it)
        guard_sigchld()  # after iter(): torch installs its handler there
        return it

    def _seed_kept_workers(self, dataloader: DataLoader[Any]) -> None:
        """Workers the loader keeps by its own choice get this iteration's base seed in
        its plans, drawn as a DataLoader that started them afresh would draw it
        (:mod:`hotset.torch.workerseed`); the first iter() starts and seeds them itself."""
        kept = self._dataloader_iters > 0 and self._parts.fetcher.reseed is not None
        self._parts.sampler.worker_seed = (
            (self._dataloader_iters, draw_base_seed(dataloader.generator)) if kept else None
        )

    def _progress_bar(self) -> Any:
        """A tqdm bar over the epoch's batches (``progress=True``), else None."""
        if not self.progress:
            return None
        import sys

        from tqdm import tqdm

        return tqdm(
            total=self._parts.planner.n_batches,
            initial=self._cursor.yielded,
            desc=f"{self.system.name} epoch {self._parts.planner.epoch}",
            unit="batch",
            file=sys.stderr,
        )

    def _next_batch(self, it: Iterator[Any]) -> tuple[Any, Any, Any, Any, dict[str, Any]] | None:
        """The next fetched batch, None at the epoch's end; a fetch's error raised as it is,
        a dead worker as a HotsetError naming it (:mod:`hotset.torch.workerdeath`)."""
        watch = self._watch
        if watch.noticed is not None and self._cursor.yielded < self._parts.planner.n_batches:
            self._worker_lost(", ".join(watch.dead()) or str(watch.noticed), watch.noticed)
        try:
            with watch.waiting():
                batch = next(it)
        except StopIteration:
            return None
        except BaseException as exc:
            died = watch.death_of(exc) if self.num_workers else None
            if died is None:
                self._renew_kept_workers()
                raise
            self._worker_lost(died, exc)
        if isinstance(batch, HotsetError):
            # returned by the fetcher, not raised (see hotset.torch.fetch): the
            # user sees the error itself, not torch's wrapper around its traceback
            raise batch
        return batch

    def _worker_lost(self, what: str, cause: BaseException) -> None:
        """Raise the death of a worker (``what``: which, and how it died), the loader ready
        to be closed, resumed or iterated again."""
        # The worker may have died holding the cache-write turn: abandon
        # now, so the others stop at once rather than at their timeout.
        self._abandon_unwritten(clear=False)
        self._watch.unblock_shutdown()  # or a lock it held could hang the iterator's shutdown
        self._renew_kept_workers()
        raise WorkerDied(
            f"{what}: a DataLoader worker died (killed, or by the out-of-memory "
            "killer); the epoch's unwritten batches were abandoned and the "
            "loader can be closed, resumed from a state_dict or iterated again"
        ) from cause

    def _renew_kept_workers(self) -> None:
        """After an error from the DataLoader, workers it keeps across epochs are not
        trusted with the next one (one may be dead, or stuck past ``timeout``): a fresh
        DataLoader starts its own, as one that does not keep them always does. The old
        one's workers shut down with its iterator."""
        if self._parts.dataloader is not None and self._parts.dataloader.persistent_workers:
            self._parts.dataloader = self._parts.new_dataloader()
            self._dataloader_iters = 0

    def _account(
        self,
        stats: EpochStats,
        info: dict[str, Any],
        served: np.ndarray,
        weights: np.ndarray,
        stall: float,
    ) -> np.ndarray:
        """Count a fetched batch: its report row, what it served, how far writes got.

        Coverage counts the samples trained: one served with a loss weight of 0
        (``base``'s unselected samples) was read and delivered but trains nothing."""
        self._parts.packages.consumed()  # its packages were read: the files can go
        self._parts.packages.read_lost(
            info.pop("packages_lost", 0),
            info.pop("package_member_reads", 0),
            info.pop("package_lost_reason", ""),
        )
        info.pop("package_member_bytes", None)
        self._parts.planner.cache_lost(
            info.pop("lost_ids", ()), info.pop("cache_unreachable", False)
        )
        stats.add(info, stall)
        if info["skipped"]:
            self._note_skipped(info["skipped_errors"])
        stats.absorb(self._parts.readahead.counts, self._parts.prefetcher.counts)
        self._coverage.add(served[weights > 0])
        self._cursor.served(served)
        self._parts.planner.confirm(self._parts.sequencer.written_upto)
        return served


def loader(
    data: HotsetDataset | str | Any,
    *,
    system: str = LoaderOptions.system,
    cache: str | int | float | list[str] | None = LoaderOptions.cache,
    batch_size: int = LoaderOptions.batch_size,
    **options: Any,
) -> HotsetLoader:
    """Build a :class:`HotsetLoader` over ``data``.

    ``data`` is a :class:`HotsetDataset` (:func:`open_dataset`), a location
    (opened with ``decode="image"``), or the user's own map-style ``Dataset``:
    its items, as ``__getitem__`` returns them, are cached in a safe encoding
    of tensors, arrays, numbers and strings, never pickled (see
    :mod:`hotset.torch.user`; :func:`hotset.from_dataset` caches raw bytes
    instead, which holds more samples). ``loader.dataset`` is what was given.

    The options, each checked by name when the loader is built
    (:class:`~hotset.torch.options.LoaderOptions`, which this list is made from):

    """
    return HotsetLoader(data, system=system, cache=cache, batch_size=batch_size, **options)


if loader.__doc__ is not None:  # None under python -OO
    loader.__doc__ = (
        loader.__doc__.rstrip()
        + "\n\n"
        + describe_options()
        + "\n\n    The DataLoader's keywords it has no option for (hotset.torch.dlkeywords):\n\n"
        + describe_dataloader_keywords()
        + "\n"
    )
