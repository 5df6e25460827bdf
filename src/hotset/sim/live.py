"""Live-training simulation: a real small model, a named system, a modeled slow store.

:func:`run_live` trains a PyTorch model on the CPU while a :class:`System`
decides the order and the cache, and reports per epoch what the storage saw
(requests, exact hits, substitutions, storage reads and bytes, modeled I/O
time) next to what training got (loss, validation accuracy). It is the driver
behind ``hotset simulate --system``; one :class:`LiveOptions` declares a run.

What is real and what is modeled, explicitly:

* **Decisions are real.** Every planned sample goes through
  ``system.access``; the policy object is the same one the loader would drive.
* **Storage reads are real.** Each MISS reads its bytes from the dataset's
  store, wrapped in a virtual-clock :class:`ThrottledStore`, one
  ``read_many`` per step; the bytes are checked against the manifest's xxh3.
  Exact hits and substitutions never touch the store.
* **Pixels come from one up-front decode.** All samples are decoded once
  before training (every one hash-checked against the manifest), so a step
  indexes a tensor instead of decoding; because the manifest hash pins the
  bytes, the tensor equals what decoding the bytes just read would give.
* **Time is modeled, never measured, in the policy path.** A step issues its
  misses at the virtual now as one concurrent ``read_many`` and waits for them
  (``store.sync``: a loader without prefetch), then computes for
  ``compute_ms_per_batch`` (default 0; ``store.advance``). ``modeled_io_seconds``
  sums those waits over an epoch -- with no compute time it is exactly the growth
  of the store's virtual makespan -- and ``modeled_epoch_seconds`` adds the
  compute. Results do not depend on how busy this machine is;
  ``wall_seconds`` is the only measured number.

Accuracy: on the held-out validation split, or with ``test_dataset`` on a separate test
set (same classes and image shape; never read through the store, the cache or the
clock), which leaves every read and order of the run as it was: only what accuracy is
measured on changes.

Ids: the validation split is held out and never read through the cache. The
system sees the training samples as ids ``0..n_train-1``; ``train_rows[i]`` is
the manifest id of training id ``i`` (both lists are sorted, so the mapping is
monotone).

Training: SGD (momentum 0.9, weight decay 5e-4), learning rate cosine-annealed
per epoch (``lr * (1 + cos(pi * e / epochs)) / 2`` for the 0-based epoch ``e``;
per epoch rather than per step because importance samplers vary an epoch's
length), no augmentation, per-sample cross-entropy weighted by
``system.weights``. The model init depends only on ``seed``, so at one seed
every system starts from the same weights and differences come from the data
order.

Epoch numbers: the system is called with 0-based epochs (``begin_epoch(0)``
first, as samplers key their RNG by it); the JSON reports 1-based ``epoch``.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.data.package_writer import PackageWriter
from hotset.data.stratify import stratified_split
from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.counters import COUNTER_KEYS, Coverage, EpochCounts
from hotset.engine.plan import BatchPlan
from hotset.engine.planner import Planner
from hotset.engine.roles import NeedsFuture, missing_role
from hotset.engine.units import SubsetLayout, UnitLayout, member_ranges
from hotset.errors import HotsetError, IntegrityError
from hotset.samplers.base import EpochContext
from hotset.sim.identification import top_precision
from hotset.sim.trainer import Trainer
from hotset.storage.ranges import read_ranges
from hotset.systems.base import System
from hotset.systems.registry import build_system, capabilities_of, resolve_system

#: one intra-op thread: on a shared 2-core machine two threads spin against other
#: processes (a tiny MLP step went from 0.5 ms to 70 ms), and a fixed count keeps
#: float reductions, hence the JSON, independent of the machine
_THREADS = 1


@dataclass(frozen=True)
class LiveOptions:
    """One live-training run, declared once: what :func:`run_live` trains and
    how the store and the clock are modeled.

    ``cache_frac`` is the cache budget as a fraction of the training bytes
    (0 < F <= 1; 0 is allowed for systems that ignore the cache). ``options`` go to
    the system's ``build``; ``system`` may be a spec, ``shade[coverage_floor=0.05]``:
    its options join ``options`` (one given both ways is an error), and the result
    names the system and lists every option under ``config``.

    ``train=False`` skips the model for systems whose decisions cannot depend on
    it (no scorer, unweighted): their order and cache decisions are then exactly
    those of a trained run, and the accuracy fields are ``None``. A system that
    learns from losses is refused. ``record_accesses`` adds ``"accesses"``: the
    requested training ids of each epoch, in order (for offline bounds), and
    ``"served"``: the ids each epoch trained, in order (substitutions and a chunk
    system's reordering included).
    ``measure_identification`` adds ``top1_precision`` to each trained epoch after
    the first: how many of the truly top 1% samples (a forward pass over all of
    them) the losses the sampler drew from rank there
    (:mod:`hotset.sim.identification`; it changes no decision and no modeled time).
    ``device`` trains on an accelerator (``"cuda"``: bf16 autocast, channels_last;
    :mod:`hotset.sim.trainer`); ``measure_compute`` charges each step (and each
    re-evaluation, and the held-out models of ``sampler=rho``) the wall seconds it
    took on that device instead of ``compute_ms_per_batch``: modeled I/O beside
    measured compute (the device-ready benchmark's clock). ``test_dataset`` (a data set
    directory) measures accuracy on that test set instead of the held-out split: the
    split stays held out, so the run reads and orders what it would without one.

    The fields that do not depend on the system are checked here, so a bad value is
    refused where it is built; ``cache_frac``'s range depends on the system (one that
    ignores its budget may have 0), resolved against the data set when the run starts.
    """

    system: str
    dataset: str
    cache_frac: float
    epochs: int
    seed: int
    model: str = "auto"
    batch_size: int = 128
    lr: float = 0.05
    val_frac: float = 0.1
    latency_ms: float = 2.0
    bandwidth_mb_s: float = 100.0
    concurrency: int = 4
    options: Mapping[str, Any] | None = None
    compute_ms_per_batch: float = 0.0
    train: bool = True
    record_accesses: bool = False
    measure_identification: bool = False
    device: str = "cpu"
    measure_compute: bool = False
    test_dataset: str | None = None

    def __post_init__(self) -> None:
        _validate(self)


def run_live(opts: LiveOptions, /, *, progress: bool = False) -> dict[str, Any]:
    """Train for ``opts.epochs`` epochs with ``opts.system`` on ``opts.dataset``; return
    the result JSON (``progress``: a bar on stderr, which changes nothing in the result)."""
    run = _prepare(opts)
    if not opts.train:
        return _run_untrained(opts, run, progress=progress)
    return _run_trained(opts, run, progress=progress)


@dataclass(frozen=True)
class _Run:
    """A run once its system is resolved and built: the data set split, the budget,
    the throttled store, and the ``config`` block its result reports."""

    #: the system's resolved name (``auto`` replaced by what it picked)
    system: str
    sys_obj: System
    inner: Any
    manifest: Any
    labels: npt.NDArray[np.int64]
    train_rows: IntArray
    val_rows: IntArray
    train_sizes: IntArray
    capacity: int
    layout: UnitLayout | None
    store: Any
    #: every epoch's order, for a policy that needs the future (None otherwise)
    future: list[IntArray] | None
    keys: list[str]
    hashes: list[str]
    config: dict[str, Any]
    #: the test set accuracy is measured on (None: the held-out split): its store,
    #: keys, hashes and labels
    test: _TestSet | None = None


@dataclass(frozen=True)
class _TestSet:
    """A separate test set (``LiveOptions.test_dataset``), opened and checked against
    the training set's classes."""

    store: Any
    keys: list[str]
    hashes: list[str]
    labels: npt.NDArray[np.int64]


def _check_exists(path: str, what: str) -> None:
    """A local data set path that is not there is refused by name, before any work (a
    URL is left to its store)."""
    if "://" not in path and not Path(path).exists():
        raise HotsetError(f"{what} {path!r} does not exist")


def _open_test(path: str, num_classes: int) -> _TestSet:
    """``path`` opened as a test set: it exists, every sample is labeled, and its labels
    are classes the training set has (a test of other classes would measure nothing)."""
    from hotset.data import open_dataset

    _check_exists(path, "test_dataset")
    manifest, store = open_dataset(path)
    labels = _labels(manifest, path)
    if len(labels) == 0:
        raise HotsetError(f"test_dataset {path!r} has no samples")
    if int(manifest.num_classes) != num_classes or int(labels.max()) >= num_classes:
        raise HotsetError(
            f"test_dataset {path!r} has {int(manifest.num_classes)} classes (labels up to "
            f"{int(labels.max())}); the training set has {num_classes}"
        )
    return _TestSet(store, list(manifest.keys), list(manifest.hashes), labels)


def _prepare(opts: LiveOptions) -> _Run:
    """Resolve and check the system against the data set, split the data set, build the
    system over the training ids and the virtual-clock store in front of the data."""
    choice = _auto_choice(opts.system, opts.dataset, opts.options)
    system = opts.system if choice is None else choice.system
    system, options = resolve_system(system, opts.options, source="options")
    _check_cache_frac(system, opts.cache_frac)
    _check_exists(str(opts.dataset), "dataset")
    _check_device(opts.device)

    from hotset.data import open_dataset
    from hotset.data.chunks import load_layout
    from hotset.storage.throttled import ThrottledStore

    manifest, inner = open_dataset(opts.dataset)
    labels = _labels(manifest, opts.dataset)
    test = None
    if opts.test_dataset is not None:
        test = _open_test(str(opts.test_dataset), int(manifest.num_classes))
    train_rows, val_rows = stratified_split(labels, val_frac=opts.val_frac, seed=opts.seed)
    train_sizes = np.asarray(manifest.sizes, dtype=np.int64)[train_rows]
    capacity = math.floor(opts.cache_frac * int(train_sizes.sum()))
    full_layout = load_layout(opts.dataset)
    layout = None if full_layout is None else SubsetLayout(full_layout, train_rows)
    sys_obj = build_system(
        system,
        n=len(train_rows),
        budget=Budget(capacity_bytes=capacity, sizes=train_sizes),
        seed=opts.seed,
        batch_size=opts.batch_size,
        layout=layout,
        **(options or {}),
    )
    store = ThrottledStore(
        inner,
        latency_ms=opts.latency_ms,
        bandwidth_mb_s=opts.bandwidth_mb_s,
        max_concurrency=opts.concurrency,
        clock="virtual",
    )
    future = _plan_future(sys_obj, opts.epochs)
    return _Run(
        system=system,
        sys_obj=sys_obj,
        inner=inner,
        manifest=manifest,
        labels=labels,
        train_rows=train_rows,
        val_rows=val_rows,
        train_sizes=train_sizes,
        capacity=capacity,
        layout=layout,
        store=store,
        future=future,
        keys=[manifest.keys[r] for r in train_rows.tolist()],
        hashes=[manifest.hashes[r] for r in train_rows.tolist()],
        config=_config(opts, options, choice),
        test=test,
    )


def _labels(manifest: Any, dataset: str) -> npt.NDArray[np.int64]:
    """The data set's labels; an unlabeled sample is refused (training needs labels)."""
    labels = np.asarray(manifest.labels, dtype=np.int64)
    if (labels < 0).any():
        first = int(np.flatnonzero(labels < 0)[0])
        raise HotsetError(
            f"dataset {dataset!r}: sample {first} is unlabeled; training needs labels"
        )
    return labels


def _config(opts: LiveOptions, options: Mapping[str, Any] | None, choice: Any) -> dict[str, Any]:
    """The result's ``config`` block: what the run was modeled with, so a result file
    says how it was made."""
    return {
        "batch_size": opts.batch_size,
        "lr": opts.lr,
        "val_frac": opts.val_frac,
        "latency_ms": opts.latency_ms,
        "bandwidth_mb_s": opts.bandwidth_mb_s,
        "concurrency": opts.concurrency,
        "compute_ms_per_batch": opts.compute_ms_per_batch,
        "device": opts.device,
        "measure_compute": bool(opts.measure_compute),
        "test_dataset": None if opts.test_dataset is None else str(opts.test_dataset),
        "options": dict(options or {}),
        "trained": bool(opts.train),
        # system="auto": what it picked and why (the loader's rule, the same facts)
        "auto": None if choice is None else choice.describe(),
    }


def _run_untrained(opts: LiveOptions, run: _Run, *, progress: bool) -> dict[str, Any]:
    """The run without a model: the same decisions for a system that does not learn,
    no accuracy, and no decoding of the data set."""
    if run.sys_obj.capabilities.learns:
        raise HotsetError(
            f"system {run.system!r} learns from training losses; it cannot run with train=False"
        )
    driver = _driver(opts, run, trainer=None)
    epoch_rows = driver.run(opts.epochs, future=run.future, progress=progress)
    return _result(opts, run, driver, epoch_rows, model_name=None)


def _driver(opts: LiveOptions, run: _Run, *, trainer: Any, **measure: bool) -> _Driver:
    """The epoch driver over ``run``'s system, store and ids (``measure``: what a trained
    run also measures)."""
    return _Driver(
        system=run.sys_obj,
        store=run.store,
        trainer=trainer,
        keys=run.keys,
        hashes=run.hashes,
        sizes=run.train_sizes,
        batch_size=opts.batch_size,
        compute_seconds=opts.compute_ms_per_batch / 1000.0,
        layout=run.layout,
        **measure,
    )


def _run_trained(opts: LiveOptions, run: _Run, *, progress: bool) -> dict[str, Any]:
    """The run with a real model: decoded once, seeded by ``opts.seed`` alone (every
    system starts from the same weights), on one intra-op thread (see ``_THREADS``)."""
    import torch

    from hotset.sim.models import resolve_model_name

    images = _decode_all(run.inner, run.manifest.keys, run.manifest.hashes)
    _, channels, height, width = images.shape
    held_out = _held_out(opts, run, images)
    model_name = resolve_model_name(opts.model, height)
    num_classes = int(run.manifest.num_classes)
    meta = {"channels": channels, "image_size": [height, width], "num_classes": num_classes}
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(_THREADS)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(opts.seed)
            trainer = _trainer(opts, run, images, held_out, model_name, meta)
            del images
            setup = _irreducible_setup(
                run.sys_obj, trainer, run.store, run.keys, seed=opts.seed,
                batch_size=opts.batch_size, lr=opts.lr,
                compute_seconds=opts.compute_ms_per_batch / 1000.0,
                measure=opts.measure_compute, meta=meta,
            )  # fmt: skip
            driver = _driver(
                opts,
                run,
                trainer=trainer,
                measure_identification=opts.measure_identification,
                measure_compute=opts.measure_compute,
            )
            epoch_rows = driver.run(opts.epochs, future=run.future, progress=progress)
    finally:
        torch.set_num_threads(prev_threads)
    return _result(opts, run, driver, epoch_rows, model_name=model_name, setup=setup)


def _held_out(
    opts: LiveOptions, run: _Run, images: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """What accuracy is measured on: the test set's pixels and labels, decoded once
    (its shape checked against the training images'), or the held-out split's."""
    if run.test is None:
        return images[run.val_rows], run.labels[run.val_rows]
    test = _decode_all(run.test.store, run.test.keys, run.test.hashes)
    if test.shape[1:] != images.shape[1:]:
        raise HotsetError(
            f"test_dataset {opts.test_dataset!r}: its images are {_shape(test)}, the "
            f"training set's {_shape(images)}"
        )
    return test, run.test.labels


def _shape(images: npt.NDArray[np.float32]) -> str:
    return "x".join(str(d) for d in images.shape[1:])


def _trainer(
    opts: LiveOptions,
    run: _Run,
    images: npt.NDArray[np.float32],
    held_out: tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]],
    model_name: str,
    meta: dict[str, Any],
) -> Trainer:
    """The model (built under the caller's seeded RNG) and its training and held-out
    tensors."""
    import torch

    from hotset.sim.models import make_model

    net = make_model(model_name, meta)
    return Trainer(
        net=net,
        x_train=torch.from_numpy(images[run.train_rows]),
        y_train=torch.from_numpy(run.labels[run.train_rows]),
        # copies: a test set's decoded pixels are the read-only cached array
        x_val=torch.from_numpy(np.array(held_out[0])),
        y_val=torch.from_numpy(np.array(held_out[1])),
        lr=opts.lr,
        epochs=opts.epochs,
        device=opts.device,
    )


def _irreducible_setup(
    system: System,
    trainer: Trainer,
    store: Any,
    keys: list[str],
    *,
    seed: int,
    batch_size: int,
    lr: float,
    compute_seconds: float,
    measure: bool,
    meta: dict[str, Any],
) -> dict[str, Any] | None:
    """``sampler=rho`` without irreducible losses: train the held-out models
    (:mod:`hotset.sim.irreducible`), give the system their losses, charge their cost
    on the modeled clock before the first epoch; what was charged (None: nothing to do)."""
    if not system.needs_irreducible:
        return None
    import hotset.sim.irreducible as irreducible
    from hotset.sim.models import make_model

    started = time.perf_counter()
    losses = irreducible.holdout_losses(
        trainer.x_train,
        trainer.y_train,
        make_net=lambda: make_model("auto", meta).to(trainer.device),
        seed=seed,
        batch_size=batch_size,
        lr=lr,
    )
    measured = time.perf_counter() - started
    system.set_irreducible(np.arange(len(losses)), losses)
    return irreducible.charge(
        store,
        keys,
        batch_size=batch_size,
        compute_seconds=compute_seconds,
        measured=measured if measure else None,
    )


def _result(
    opts: LiveOptions,
    run: _Run,
    driver: _Driver,
    epoch_rows: list[dict[str, Any]],
    *,
    model_name: str | None,
    setup: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The result JSON: the run's facts, its epochs and totals, and what the policy
    says of itself (with ``record_accesses``, the orders requested and served)."""
    result: dict[str, Any] = {
        "system": run.system,
        "dataset": str(opts.dataset),
        "cache_frac": float(opts.cache_frac),
        "seed": int(opts.seed),
        "model": model_name,
        "n_train": len(run.train_rows),
        "n_val": len(run.val_rows),
        # what val_accuracy is measured on: the test set's samples, or the split's
        "n_accuracy": len(run.val_rows) if run.test is None else len(run.test.labels),
        "capacity_bytes": run.capacity,
        "train_bytes": int(run.train_sizes.sum()),
        "config": run.config,
        "epochs": epoch_rows,
        "totals": _totals(epoch_rows),
        "policy": driver.system.policy.summary(),
        #: work charged before the first epoch (sampler=rho's held-out models), or None
        "setup": setup,
    }
    if opts.record_accesses:
        result["accesses"] = [order.tolist() for order in driver.orders]
        result["served"] = [served for served in driver.served]
    return result


# -- pieces ---------------------------------------------------------------------


def _auto_choice(system: str, dataset: str, options: Mapping[str, Any] | None) -> Any:
    """What ``system="auto"`` picks for ``dataset``: the loader's own rule
    (:func:`hotset.systems.auto.choose`), so the simulator decides as the loader would."""
    from hotset.data.chunks import ChunkLayout
    from hotset.systems.auto import choose, is_auto

    if not is_auto(system):
        return None
    if options:
        raise HotsetError(f"system 'auto' takes no options, got {options!r}; name the system")
    return choose(packed="://" not in str(dataset) and ChunkLayout.exists(dataset))


def _plan_future(system: System, epochs: int) -> list[IntArray] | None:
    """Every epoch's order up front, handed to a policy that ``needs_future`` (Belady).

    Exact only for samplers whose order ignores feedback (the random sampler):
    the driver checks each epoch's real order against the plan and fails loudly
    if they differ, rather than report a bound that was not one.
    """
    if not system.capabilities.needs_future:
        return None
    orders = [
        np.asarray(system.sampler.order(EpochContext(epoch=e)), dtype=np.int64)
        for e in range(epochs)
    ]
    if not isinstance(system.policy, NeedsFuture):
        raise missing_role(system.policy, "NeedsFuture", "needs_future")
    system.policy.set_future(np.concatenate(orders) if orders else np.empty(0, np.int64))
    return orders


#: the last data sets decoded (a training set and its test set), keyed by their manifest
#: hashes (which pin their bytes): a benchmark runs many systems over one data set in
#: one process, and a 50,000-image set takes seconds to decode each time
_DECODED: dict[tuple[str, ...], npt.NDArray[np.float32]] = {}
_DECODED_KEPT = 2


def _decode_all(store: Any, keys: Sequence[str], hashes: Sequence[str]) -> npt.NDArray[np.float32]:
    """Read (uncounted by the throttled wrapper) and decode every sample once per data set
    (read-only: callers index copies out of it)."""
    pinned = tuple(hashes)
    if pinned in _DECODED:
        return _DECODED[pinned]
    images = _decode_fresh(store, keys, hashes)
    images.flags.writeable = False
    while len(_DECODED) >= _DECODED_KEPT:  # the oldest goes (dicts keep insertion order)
        del _DECODED[next(iter(_DECODED))]
    _DECODED[pinned] = images
    return images


def _decode_fresh(
    store: Any, keys: Sequence[str], hashes: Sequence[str]
) -> npt.NDArray[np.float32]:
    from hotset.data.decode import decode_many
    from hotset.data.manifest import content_hash

    blobs = store.read_many(list(keys))
    for key, blob, want in zip(keys, blobs, hashes, strict=True):
        got = content_hash(blob)
        if got != want:
            raise IntegrityError(
                f"{key!r}: content hash {got} does not match the manifest's {want}"
            )
    return np.ascontiguousarray(decode_many(blobs, list(keys)), dtype=np.float32)


class _Driver:
    """Drives the one engine's plans: reads what each plan reads, trains, counts."""

    def __init__(
        self,
        *,
        system: System,
        store: Any,
        trainer: Trainer | None,
        keys: list[str],
        hashes: list[str],
        sizes: IntArray,
        batch_size: int,
        compute_seconds: float,
        layout: UnitLayout | None,
        measure_identification: bool = False,
        measure_compute: bool = False,
    ) -> None:
        self.system = system
        #: charge compute as measured on the device, not compute_seconds per step
        self.measure_compute = measure_compute
        self.measure_identification = measure_identification
        self.store = store
        self.trainer = trainer
        self.keys = keys
        self.hashes = hashes
        self.sizes = sizes
        self.layout = layout
        #: the packing step (a policy that builds packages): its packages are its units
        self.packer: PackageWriter | None = None
        if system.capabilities.packs:
            self.layout = system.policy.layout
            self.packer = PackageWriter.for_policy(
                system.policy, store, keys=keys, hashes=hashes, sizes=sizes, label="sim"
            )
        self.compute_seconds = compute_seconds
        self.planner = Planner(system, n=len(keys), batch_size=batch_size, lag=0, sizes=sizes)
        self.coverage = Coverage(len(keys))
        #: the requested ids of each epoch, in order
        self.orders: list[IntArray] = []
        #: the ids each epoch trained, in order
        self.served: list[list[int]] = []
        #: samples the epoch's re-evaluation read from the store (the cache lacked them)
        self.evaluate_reads = 0

    def run(
        self, epochs: int, *, future: list[IntArray] | None, progress: bool
    ) -> list[dict[str, Any]]:
        from tqdm import tqdm

        rows: list[dict[str, Any]] = []
        bar = tqdm(
            range(epochs),
            desc=self.system.name,
            unit="epoch",
            file=sys.stderr,
            disable=not progress,
        )
        try:
            for epoch in bar:
                row = self._epoch(epoch, None if future is None else future[epoch])
                rows.append(row)
                bar.set_postfix(
                    hit=f"{row['exact_hit_ratio']:.3f}",
                    reads=row["storage_reads"],
                    acc="-" if row["val_accuracy"] is None else f"{row['val_accuracy']:.3f}",
                )
        finally:
            if self.packer is not None:
                self.packer.remove()  # the run's package files go with it
        return rows

    def _epoch(self, epoch: int, planned: IntArray | None) -> dict[str, Any]:
        wall_start = time.perf_counter()
        clock_start = self.store.now
        planner = self.planner
        self.evaluate_reads = 0
        planner.begin(epoch, evaluate=self._evaluate if self.trainer is not None else None)
        identification = self._identification(epoch)
        order = planner.order
        #: what kind of order the sampler made (PADS: relaxed, aggressive, shuffle, ...)
        kind = str(getattr(self.system.sampler, "last_mode", ""))
        if planned is not None and not np.array_equal(order, planned):
            raise HotsetError(
                f"system {self.system.name!r}: its policy needs the future, but epoch {epoch}'s "
                "order differs from the one planned up front (the sampler uses feedback)"
            )
        self.orders.append(order)
        self.served.append([])
        if self.trainer is not None:
            self.trainer.set_epoch(epoch)
        counts = EpochCounts()
        io_seconds = 0.0
        for plan in planner.plans():
            counts.add_plan(plan)
            io_seconds += self._step(plan)
        val_accuracy = None if self.trainer is None else self.trainer.accuracy()
        trained = planner.feedback.loss_count
        planner.finish(val_accuracy=val_accuracy)
        counts.check(f"epoch {epoch}")
        return {
            "epoch": epoch + 1,
            **counts.as_dict(),
            **self.coverage.close_epoch(),
            "exact_hit_ratio": counts.exact_hit_ratio,
            "order": kind,
            "evaluated": planner.evaluated,
            "evaluate_reads": self.evaluate_reads,
            **identification,
            "train_loss": self.system.train_loss[-1] if trained else None,
            "val_accuracy": val_accuracy,
            "modeled_io_seconds": io_seconds,
            "modeled_epoch_seconds": self.store.now - clock_start,
            "wall_seconds": time.perf_counter() - wall_start,
        }

    def _identification(self, epoch: int) -> dict[str, float]:
        """``top1_precision`` of the losses this epoch was drawn from (when measured)."""
        if not self.measure_identification or self.trainer is None or epoch == 0:
            return {}
        estimate = self.system.table.snapshot().losses
        truth = self.trainer.forward_losses(np.arange(len(estimate), dtype=np.int64))
        return {"top1_precision": top_precision(estimate, truth)}

    def _evaluate(self, ids: IntArray) -> npt.NDArray[np.float64]:
        """A forward pass over ``ids``, their bytes from the cache where it holds them.

        As in the loader (``evaluate_with``), a sample the cache does not hold is
        read from the store first (counted in ``evaluate_reads``, its wait charged).
        Modeled compute: a third of a training step per sample (forward only), at
        ``compute_seconds`` per batch.
        """
        assert self.trainer is not None
        policy = self.system.policy
        missing = [int(s) for s in ids.tolist() if s not in policy]
        self.evaluate_reads = len(missing)
        if missing:
            self._read(missing, [])
            self.store.sync()
        started = time.perf_counter()
        losses = self.trainer.forward_losses(ids)
        modeled = self.compute_seconds * len(ids) / (3 * self.planner.batch_size)
        self._compute(modeled, time.perf_counter() - started)
        return losses

    def _compute(self, modeled: float, measured: float) -> None:
        """Let a step's compute pass on the clock: as modeled, or as measured."""
        seconds = measured if self.measure_compute else modeled
        if seconds > 0:
            self.store.advance(seconds)

    def _step(self, plan: BatchPlan) -> float:
        """Read the plan's storage reads, train on its served ids; modeled I/O wait."""
        waited = 0.0
        reading = set(plan.unit_reads.tolist())
        early = [u for u in plan.packs.tolist() if u in reading]
        if early:  # a package read by this very batch is written first (and waited for)
            assert self.packer is not None and self.layout is not None
            self.packer.write(self.layout, early)
        if len(plan.reads) or len(plan.unit_reads):
            issued = self.store.now
            self._read(plan.reads.tolist(), plan.unit_reads.tolist(), plan.read_groups)
            waited = self.store.sync() - issued  # the step waits for its own data
        if len(plan.prefetch):
            # issued now, waited for by a later step: the prefetch overlaps compute
            self._read([], plan.prefetch.tolist())
        ahead = [u for u in plan.packs.tolist() if u not in early]
        if ahead:  # the packing step runs in the background, like a prefetch
            assert self.packer is not None and self.layout is not None
            self.packer.write(self.layout, ahead)
        served = plan.served
        self.served[-1].extend(served.tolist())
        self.coverage.add(served[plan.weights > 0])  # a weight of 0 trains nothing (``base``)
        started = time.perf_counter()
        if self.trainer is not None:
            losses = self.trainer.step(served, plan.weights)
            measured = time.perf_counter() - started
            self.planner.give(plan.index, served, losses)
        else:
            measured = 0.0
        self._compute(self.compute_seconds, measured)
        return waited

    def _read(
        self, ids: list[int], units: list[int], groups: dict[int, IntArray] | None = None
    ) -> None:
        """Read samples, whole units and partial units (one ranged request each, issued
        at the same modeled moment as the rest) from the throttled store; check each sample."""
        got: dict[int, bytes] = {}
        if groups:
            assert self.layout is not None  # the planner refuses groups without a layout
            grouped = set()
            for u, members in groups.items():
                sids = members.tolist()
                ranges = member_ranges(self.layout, u, sids)
                parts = read_ranges(self.store, self.layout.chunk_keys[u], ranges)
                got.update(zip(sids, parts, strict=True))
                grouped.update(sids)
            ids = [i for i in ids if i not in grouped]
        keys = [self.keys[i] for i in ids]
        if units:
            assert self.layout is not None  # the planner refuses units without a layout
            keys += [self.layout.chunk_keys[u] for u in units]
        blobs = self.store.read_many(keys) if keys else []
        got.update(zip(ids, blobs[: len(ids)], strict=True))
        for u, blob in zip(units, blobs[len(ids) :], strict=True):
            assert self.layout is not None
            got.update(self.layout.split(u, blob))
        from hotset.data.manifest import content_hash

        for sid, blob in got.items():
            if len(blob) != int(self.sizes[sid]) or content_hash(blob) != self.hashes[sid]:
                raise IntegrityError(
                    f"{self.keys[sid]!r}: the bytes read do not match the manifest "
                    f"({len(blob)} bytes, manifest says {int(self.sizes[sid])})"
                )


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    totals: dict[str, Any] = {
        key: sum(row[key] for row in rows)
        for key in (*COUNTER_KEYS, "modeled_io_seconds", "modeled_epoch_seconds", "wall_seconds")
    }
    totals["exact_hit_ratio"] = (
        totals["exact_hits"] / totals["requests"] if totals["requests"] else 0.0
    )
    later = rows[1:]
    later_requests = sum(row["requests"] for row in later)
    totals["exact_hit_ratio_after_first"] = (
        sum(row["exact_hits"] for row in later) / later_requests if later_requests else None
    )
    totals["final_val_accuracy"] = rows[-1]["val_accuracy"] if rows else None
    return totals


def _check_cache_frac(system: str, cache_frac: float) -> None:
    """``cache_frac`` in range for ``system`` (resolved): 0 only where its budget changes
    nothing."""
    low_ok = not capabilities_of(system).uses_budget  # its cache size changes nothing
    if not _finite(cache_frac) or not (
        (0.0 <= cache_frac <= 1.0) if low_ok else (0.0 < cache_frac <= 1.0)
    ):
        want = "0 <= F <= 1" if low_ok else "0 < F <= 1"
        raise HotsetError(
            f"cache_frac must satisfy {want} for system {system!r}, got {cache_frac!r}"
        )


def _validate(opts: LiveOptions) -> None:
    """The checks of :class:`LiveOptions` that need neither the system nor the data
    set; each error names the field."""
    from hotset.sim.models import MODEL_NAMES

    if not isinstance(opts.epochs, int) or opts.epochs < 1:
        raise HotsetError(f"epochs must be an integer >= 1, got {opts.epochs!r}")
    if not isinstance(opts.batch_size, int) or opts.batch_size < 1:
        raise HotsetError(f"batch_size must be an integer >= 1, got {opts.batch_size!r}")
    if not _finite(opts.val_frac) or not 0.0 <= opts.val_frac < 0.5:
        raise HotsetError(f"val_frac must satisfy 0 <= val_frac < 0.5, got {opts.val_frac!r}")
    if opts.model not in MODEL_NAMES:
        raise HotsetError(f"unknown model {opts.model!r}; choose from {', '.join(MODEL_NAMES)}")
    if not _finite(opts.lr) or opts.lr <= 0:
        raise HotsetError(f"lr must be a positive number, got {opts.lr!r}")
    if not _finite(opts.latency_ms) or opts.latency_ms < 0:
        raise HotsetError(f"latency_ms must be >= 0, got {opts.latency_ms!r}")
    if not _finite(opts.bandwidth_mb_s) or opts.bandwidth_mb_s <= 0:
        raise HotsetError(f"bandwidth_mb_s must be > 0, got {opts.bandwidth_mb_s!r}")
    if not isinstance(opts.concurrency, int) or opts.concurrency < 1:
        raise HotsetError(f"concurrency must be an integer >= 1, got {opts.concurrency!r}")
    if not _finite(opts.compute_ms_per_batch) or opts.compute_ms_per_batch < 0:
        raise HotsetError(f"compute_ms_per_batch must be >= 0, got {opts.compute_ms_per_batch!r}")
    if opts.test_dataset is not None and not opts.train:
        raise HotsetError(
            f"test_dataset {opts.test_dataset!r} measures accuracy; a run with train=False has none"
        )


def _check_device(device: object) -> None:
    """A torch device name this machine has, or a HotsetError naming it."""
    import torch

    try:
        dev = torch.device(device)  # type: ignore[call-overload]
    except (RuntimeError, TypeError):
        raise HotsetError(f"device {device!r} is not a torch device name (cpu, cuda)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise HotsetError(f"device {device!r}: this machine has no CUDA device")


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
