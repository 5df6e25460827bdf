"""Every option of the loader in one place: its type, default, check and meaning.

:class:`LoaderOptions` is what ``hotset.loader(...)`` and ``HotsetLoader(...)``
take as keywords. Building one checks every value by name, before any I/O, so a
wrong type is a :class:`~hotset.errors.HotsetError` naming the value instead of
a torch or numpy traceback later -- or, worse, a value that silently means the
opposite (``verify="no"`` is truthy). An unknown keyword is a ``TypeError``, as
for any Python call, except the DataLoader's own that have no option here
(``shuffle=``, ``sampler=``, ...: :mod:`hotset.torch.dlkeywords` answers each).
Checks that need the data set or the system (the cache budget as a share of the
data set's bytes, whether a system builds packages) are the builder's
(:mod:`hotset.torch.builder`).

The :func:`hotset.loader` docstring lists the options from the fields' ``doc``
metadata (:func:`describe_options`), so the list and the checks cannot drift.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import multiprocessing
import multiprocessing.context
import os
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hotset.cachestore.redis_leases import LEASE_TTL_S
from hotset.cachestore.session import check_share_key
from hotset.data.digest import Digest
from hotset.errors import HotsetError
from hotset.torch.batches import check_batch_mode
from hotset.torch.checks import CHECK_MODES
from hotset.torch.dlkeywords import DATALOADER_ONLY, take_dataloader_keywords
from hotset.torch.nodecache import check_cache_scope
from hotset.units import parse_bytes

__all__ = ["DEFAULT_CACHE", "DEFAULT_READAHEAD_BYTES", "ON_ERROR", "LoaderOptions"]

#: what a sample whose read fails for good does: stop training, or leave the batch
ON_ERROR = ("raise", "skip")
#: the cache budget when none is given: a fifth of the data set's bytes
DEFAULT_CACHE = "20%"
#: read-ahead's default staging budget (outside the cache's budget)
DEFAULT_READAHEAD_BYTES = 64 * 2**20


def _doc(text: str) -> dict[str, str]:
    """A field's metadata: the text :func:`describe_options` shows for it."""
    return {"doc": " ".join(text.split())}


def check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise HotsetError(f"{name} must be an integer >= {low}, got {value!r:.80}")
    return int(value)


def max_workers() -> int:
    """The most DataLoader workers a loader starts: 8 per CPU, at least 32.

    Each worker is a process with its own interpreter, I/O threads and copy-on-write
    share of the data set's arrays; ``num_workers=1_000_000`` was accepted and forked
    until the machine killed the job. Workers only move bytes (the decisions are made in
    the main process), so more of them than this buys nothing; for more reads in flight
    per worker there is ``io_threads``.
    """
    return max(32, 8 * (os.cpu_count() or 1))


def _check_workers(value: object) -> int:
    workers = check_int("num_workers", value, 0)
    cap = max_workers()
    if workers > cap:
        raise HotsetError(
            f"num_workers={workers} is more than this machine's {cap} (8 per CPU, at least "
            "32): each worker is a process; workers only move bytes, so give fewer, and "
            "io_threads= for more reads in flight per worker"
        )
    return workers


def check_bool(name: str, value: object) -> bool:
    """Only True/False: ``verify="no"`` is truthy and would silently mean the opposite."""
    if not isinstance(value, bool | np.bool_):
        raise HotsetError(f"{name} must be True or False, got {value!r:.80}")
    return bool(value)


def _check_timeout(value: object) -> float:
    """A finite number of seconds >= 0 (0: wait forever), checked before torch sees it."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float | np.integer | np.floating)
        or not math.isfinite(value)
        or value < 0
    ):
        raise HotsetError(
            f"timeout must be a finite number of seconds >= 0 (0 waits forever), got {value!r:.80}"
        )
    return float(value)


def _check_callable(name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise HotsetError(f"{name} must be callable or None, got {value!r:.80}")


def _check_lease_ttl(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise HotsetError(f"lease_ttl_s must be a positive number of seconds, got {value!r:.80}")
    assert isinstance(value, int | float)
    return value  # kept as given: the lease's renewal period is computed from it


def _check_system_options(value: object) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise HotsetError(
            f"system_options must be a mapping of option names to values, got {value!r:.80}"
        )
    if not all(isinstance(k, str) for k in value):
        raise HotsetError(f"system_options keys must be strings, got {value!r:.80}")


def _check_context(value: object) -> None:
    if value is None:
        return
    methods = multiprocessing.get_all_start_methods()
    if isinstance(value, str):
        if value not in methods:
            raise HotsetError(
                f"multiprocessing_context must be one of {', '.join(methods)}, got {value!r:.80}"
            )
    elif not isinstance(value, multiprocessing.context.BaseContext):
        raise HotsetError(
            f"multiprocessing_context must be a start method name or a context, got {value!r:.80}"
        )


@dataclass(frozen=True)
class LoaderOptions:
    """The loader's options, checked when made (see the module docstring).

    Two are filled in when left out: ``prefetch_factor`` becomes torch's 2 when
    there are workers, and ``rank``/``world_size`` come from
    ``torch.distributed`` when both are left out (:meth:`ranks`).
    """

    system: str = field(
        default="auto",
        metadata=_doc(
            """
            the hotset System that orders and caches (`hotset systems`), with options if any:
            ``"quiver[probe=10]"`` (`hotset systems --options quiver` lists them). Held as the
            bare name once checked, its options merged into ``system_options``. ``"auto"``
            (the default) picks one when the loader is built: quiver on a data set packed
            into chunks, minio otherwise (:mod:`hotset.systems.auto`; ``summary()`` says
            which and why).
            """
        ),
    )
    cache: str | int | float | list[str] | None = field(
        default=None,
        metadata=_doc(
            """
            a budget for the embedded shared-memory cache (``"2gb"``, ``2_000_000``, ``"20%"`` or a
            float fraction of the data set's bytes such as ``0.2``; left out, 20% of the data set),
            or a backend (``"redis://host:port/db"``, ``"redis+cluster://h:p,h:p"``, a list of
            ``"host:port"`` cluster nodes, ``"memory"``) with the budget in ``cache_bytes``.
            """
        ),
    )
    cache_bytes: int | str | None = field(
        default=None,
        metadata=_doc(
            "the budget of a cache given as a backend: bytes, ``'2gb'``, ``'20%'`` or 0.2."
        ),
    )
    cache_scope: str = field(
        default="node",
        metadata=_doc(
            """
            (the embedded cache under torch.distributed) ``"node"``: the job's ranks on one machine
            share one shared-memory cache and its budget, which is memory of the node, each rank's
            policy planning its share and finding the others' entries (building the loader is then
            a collective: every rank builds its loaders in the same order); ``"rank"``: a cache of
            the whole budget per rank.
            """
        ),
    )
    batch_size: int = field(default=64, metadata=_doc("samples per batch."))
    num_workers: int = field(
        default=0,
        metadata=_doc(
            "DataLoader worker processes; 0 fetches in the main process. Workers move bytes "
            "only; at most 8 per CPU (at least 32)."
        ),
    )
    seed: int = field(
        default=0, metadata=_doc("seeds the system's orders (the same seed, the same decisions).")
    )
    pin_memory: bool = field(default=False, metadata=_doc("the DataLoader's own."))
    persistent_workers: bool | None = field(
        default=None,
        metadata=_doc(
            """
            keep the workers alive across epochs, the DataLoader's own (needs ``num_workers > 0``).
            Left out: on where workers start from a fork server or spawn (each start pays a fresh
            interpreter's imports and the data set's pickle: :mod:`hotset.torch.forksafe`), off
            where they are forked; ``False`` starts them afresh every epoch.
            """
        ),
    )
    prefetch_factor: int | None = field(
        default=None,
        metadata=_doc(
            """
            batches each worker fetches ahead (torch's 2 when left out; needs ``num_workers > 0``).
            Feedback is applied ``num_workers * prefetch_factor`` batches late, as a simulator with
            that lag does.
            """
        ),
    )
    io_threads: int = field(default=8, metadata=_doc("storage reads in flight per process."))
    readahead_bytes: int | str | None = field(
        default=None,
        metadata=_doc(
            """
            the main process reads the epoch's not-yet-cached samples ahead into a staging area this
            large, outside the cache budget (64 MiB when left out, 0 for systems that substitute
            misses, read whole units, build packages or share a namespace or a node's cache; 0
            turns it off).
            """
        ),
    )
    drop_last: bool = field(
        default=False, metadata=_doc("leave out each epoch's last partial batch.")
    )
    verify: bool = field(
        default=True,
        metadata=_doc(
            """
            check every sample against the manifest's xxh3 before it reaches training: a file read
            from storage that does not match is an :class:`~hotset.errors.IntegrityError` naming its
            key and id; a cache entry that does not match (another client wrote other bytes under
            its key) is dropped and read from storage instead, counted as ``integrity_errors`` in
            :meth:`HotsetLoader.report`. It costs one xxh3 per sample, about 0.1 us on small files
            and 1.7 us on a 100 kB one (:mod:`hotset.torch.reads`).
            """
        ),
    )
    rank: int | None = field(
        default=None, metadata=_doc("this process's rank (torch.distributed's when left out).")
    )
    world_size: int | None = field(
        default=None, metadata=_doc("the number of ranks (torch.distributed's when left out).")
    )
    system_options: Mapping[str, Any] | None = field(
        default=None,
        metadata=_doc(
            """
            options of the system, by name (``hotset systems --options NAME`` lists them), beside
            those of a ``system="NAME[option=value]"`` spec; an option given both ways is an error.
            """
        ),
    )
    namespace: str | None = field(
        default=None,
        metadata=_doc(
            """
            (Redis caches) a sharing key: jobs that give the same key and read the same data set (by
            content) share one Redis namespace, ``<key>@<data set identity>``, and its one budget
            ``cache_bytes``. Joining never clears it and closing keeps it for the next job; puts
            refused because other jobs filled the budget are skipped and counted (``refused_puts``).
            With the embedded cache, which has nothing to share, a namespace is an error. Without it
            the loader uses a private namespace, dropped when it closes.
            """
        ),
    )
    digest: str | os.PathLike[str] | Digest | None = field(
        default=None,
        metadata=_doc(
            """
            (a Redis cache; a path written by ``hotset data digest`` or a
            :class:`~hotset.data.digest.Digest`) keys the cache by the BLAKE2b of each sample's
            bytes (:mod:`hotset.cachestore.capability`): a shared namespace is then
            ``<key>@content`` whatever the data set, jobs on copies of the same content share
            entries, and a job reaches only content its digest holds. A digest made from other bytes
            is a :class:`~hotset.errors.HotsetError`.
            """
        ),
    )
    package_dir: str | os.PathLike[str] | None = field(
        default=None,
        metadata=_doc(
            """
            where iCACHE/ImPACT write their packages, a local directory created if missing; the data
            store by default, which must then be writable.
            """
        ),
    )
    pack_dir: str | os.PathLike[str] | None = field(
        default=None,
        metadata=_doc(
            """
            where a data set without a chunk layout is packed, once, for a system that reads whole
            chunks (Brand): a local directory, created if missing, holding one pack per data set
            named by its manifest identity, which later loaders find again;
            ``$XDG_CACHE_HOME/hotset/packs`` (``~/.cache/hotset/packs``) when left out. Given, Quiver
            packs an unpacked set there too (it reads one sample per request otherwise). A data set
            packed in place (``hotset data pack``) is read as it is (:mod:`hotset.data.packdir`).
            """
        ),
    )
    lease_ttl_s: float = field(
        default=LEASE_TTL_S,
        metadata=_doc(
            """
            the job holds a lease on its Redis namespace, renewed every ``lease_ttl_s / 3`` seconds;
            a killed job's private namespace is collected by the next loader on the server once its
            lease has lapsed, or by ``hotset cache gc --redis URL``
            (:mod:`hotset.cachestore.session`).
            """
        ),
    )
    on_error: str = field(
        default="raise",
        metadata=_doc(
            """
            what a sample whose read fails for good does (a :class:`~hotset.errors.StorageError`
            once the store's retries are spent, or an :class:`~hotset.errors.IntegrityError`):
            ``"raise"`` stops training with that error; ``"skip"`` leaves the sample out of its
            batch, counts it (``skipped`` in :meth:`HotsetLoader.report`), keeps its error
            (:meth:`HotsetLoader.skipped`) and warns once per epoch. A skipped sample is not trained
            that epoch (``never_trained`` shows it) and is tried again the next.
            """
        ),
    )
    check_store: str = field(
        default="auto",
        metadata=_doc(
            """
            how the manifest is checked against the store when the loader is built: ``"full"``
            (every key's size), ``"sample"`` (1000 keys), ``"off"``; ``"auto"`` is full for a local
            store, sampled for a remote one.
            """
        ),
    )
    progress: bool = field(
        default=False,
        metadata=_doc("a tqdm bar per epoch (and while a user's Dataset is wrapped)."),
    )
    timeout: float = field(
        default=0.0,
        metadata=_doc("the DataLoader's own: seconds to wait for a batch (0: forever)."),
    )
    multiprocessing_context: str | multiprocessing.context.BaseContext | None = field(
        default=None,
        metadata=_doc(
            """
            how workers start, the DataLoader's own (the loader picks ``"forkserver"`` itself where
            a fork could hang: :mod:`hotset.torch.forksafe`).
            """
        ),
    )
    worker_init_fn: Callable[[int], None] | None = field(
        default=None,
        metadata=_doc("the DataLoader's own, run after the loader's own worker set-up."),
    )
    collate_fn: Callable[[list[Any]], Any] | None = field(
        default=None,
        metadata=_doc(
            """
            the DataLoader's own: from the list of the batch's ``(x, y)`` items (each decoded
            and transformed sample with its label) to the batch, returned as ``(x, y)`` (a
            tuple or list, as ``default_collate`` gives it; more entries are dropped): the
            batch's ``x`` and ``y`` are those. A function of the inputs alone is
            ``collate_inputs``.
            """
        ),
    )
    collate_inputs: Callable[[list[Any]], Any] | None = field(
        default=None,
        metadata=_doc(
            """
            from the list of the batch's decoded samples alone to its ``x`` (default: stacked);
            ``y`` stays the labels. What ``collate_fn`` was before it took ``(x, y)`` items.
            """
        ),
    )
    batch: str = field(
        default="tuple",
        metadata=_doc(
            """
            what each batch is: ``"tuple"``, ``(x, y, ids, w)``; ``"xy"``, ``(x, y)`` as a
            DataLoader over ``(input, label)`` items gives, for a loop that must not change, the
            batch's ids then in ``loader.last_ids`` for ``update`` (refused for a system that
            weights losses, whose ``w`` it would drop); ``"dict"``, ``{"x", "y", "ids", "w"}``
            (:mod:`hotset.torch.batches`).
            """
        ),
    )
    augment: Any = field(
        default=None,
        metadata=_doc(
            """
            a batch transform from :mod:`hotset.vision` (``RandomResizedCrop(224)``: crop,
            flip and normalize, each batch's randomness drawn from a seed of the loader's
            seed, epoch and batch, so resume stays exact), run on whole batches where
            ``augment_on`` says; ``x`` is then the normalized batch on ``device``. ``"encoded"``:
            ``x`` is the batch's samples still encoded, one
            :class:`~hotset.vision.encoded.EncodedBatch`, for the loop to decode
            (:mod:`hotset.torch.devicepath`). It replaces the data set's decode and transform.
            """
        ),
    )
    augment_on: str = field(
        default="device",
        metadata=_doc(
            """
            (with ``augment``) ``"device"``: workers hand over the samples' bytes as one
            buffer, and the training process decodes (nvJPEG on a GPU where torchvision
            imports) and augments them on ``device``; ``"worker"``: workers decode and crop on
            the CPU and hand over one uint8 tensor, which is normalized on ``device``.
            """
        ),
    )
    device: str = field(
        default="cpu",
        metadata=_doc(
            """
            (with ``augment``) where the batch is decoded and augmented (``augment_on="device"``)
            or normalized (``"worker"``), and where ``x`` is delivered: ``"cuda"``, ``"cuda:1"``;
            labels, ids and weights stay on the CPU.
            """
        ),
    )

    def __post_init__(self) -> None:
        """Check every option by name, and store each in its plain Python type."""
        self._check_callables_and_system()
        self._set("batch_size", check_int("batch_size", self.batch_size, 1))
        self._set("num_workers", _check_workers(self.num_workers))
        self._set("io_threads", check_int("io_threads", self.io_threads, 1))
        self._set("seed", check_int("seed", self.seed, 0))
        for name in ("pin_memory", "drop_last", "verify", "progress"):
            self._set(name, check_bool(name, getattr(self, name)))
        if self.persistent_workers is not None:  # None: the loader decides (see the field)
            self._set(
                "persistent_workers", check_bool("persistent_workers", self.persistent_workers)
            )
        self._set("timeout", _check_timeout(self.timeout))
        check_share_key(self.namespace)
        self._set("cache_scope", check_cache_scope(self.cache_scope))
        if self.on_error not in ON_ERROR:
            raise HotsetError(
                f"on_error must be one of {', '.join(map(repr, ON_ERROR))}, "
                f"got {self.on_error!r:.80}"
            )
        self._set("lease_ttl_s", _check_lease_ttl(self.lease_ttl_s))
        self._check_store_and_paths()
        _check_callable("worker_init_fn", self.worker_init_fn)
        self._set("batch", check_batch_mode(self.batch))
        _check_context(self.multiprocessing_context)
        self._check_workers()
        self._check_ranks()
        self._check_vision()

    def _check_vision(self) -> None:
        """``augment``, ``augment_on`` and ``device`` together (:mod:`hotset.torch.devicepath`);
        a spec replaces the samples' collation, so it is refused beside ``collate_fn``."""
        from hotset.torch.devicepath import check_vision_options

        self._set("device", check_vision_options(self.augment, self.augment_on, self.device))
        for name in ("collate_fn", "collate_inputs"):
            if self.augment is not None and getattr(self, name) is not None:
                raise HotsetError(
                    "augment= makes each batch's x itself (one tensor or one encoded buffer): "
                    f"drop {name}="
                )

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # frozen: only __post_init__ writes

    def _check_callables_and_system(self) -> None:
        """``system`` as a name and ``system_options`` as every option, the spec's too.

        ``system="quiver[probe=10]"`` and ``system_options={"probe": 10}`` build the
        same system; one option given both ways is an error naming it
        (:func:`hotset.systems.registry.resolve_system`, the one parser).
        """
        from hotset.systems.registry import resolve_system

        _check_callable("collate_fn", self.collate_fn)
        _check_callable("collate_inputs", self.collate_inputs)
        if self.collate_fn is not None and self.collate_inputs is not None:
            raise HotsetError(
                "give collate_fn= (the DataLoader's: (x, y) items to a batch) or "
                "collate_inputs= (the samples to x), not both"
            )
        if not isinstance(self.system, str):
            raise HotsetError(f"system must be a system name (a string), got {self.system!r:.80}")
        _check_system_options(self.system_options)
        from hotset.systems.auto import is_auto

        if is_auto(self.system):  # resolved by the builder, which sees the data set
            self._set("system", "auto")
            return
        name, options = resolve_system(self.system, self.system_options)
        self._set("system", name)
        self._set("system_options", options)

    @property
    def system_spec(self) -> str:
        """The system with its options, as a spec: ``quiver[probe=10]``."""
        from hotset.systems.registry import format_system

        return format_system(self.system, self.system_options)

    def _check_store_and_paths(self) -> None:
        if not isinstance(self.check_store, str):
            raise HotsetError(f"check_store must be a string, got {self.check_store!r:.80}")
        if self.check_store not in CHECK_MODES:
            raise HotsetError(
                f"check_store must be one of {', '.join(CHECK_MODES)}, got {self.check_store!r}"
            )
        if self.package_dir is not None and not isinstance(self.package_dir, str | os.PathLike):
            raise HotsetError(f"package_dir must be a directory path, got {self.package_dir!r:.80}")
        if self.pack_dir is not None and not isinstance(self.pack_dir, str | os.PathLike):
            raise HotsetError(f"pack_dir must be a directory path, got {self.pack_dir!r:.80}")
        if self.readahead_bytes is not None:
            self._set("readahead_bytes", parse_bytes(self.readahead_bytes, name="readahead_bytes"))

    def _check_workers(self) -> None:
        """``prefetch_factor``/``persistent_workers`` need workers; with them the
        prefetch factor is torch's 2 unless given."""
        if self.num_workers == 0:
            if self.prefetch_factor is not None:
                raise HotsetError("prefetch_factor needs num_workers > 0")
            if self.persistent_workers:
                raise HotsetError("persistent_workers=True needs num_workers > 0")
            return
        factor = 2 if self.prefetch_factor is None else self.prefetch_factor
        self._set("prefetch_factor", check_int("prefetch_factor", factor, 1))

    def _check_ranks(self) -> None:
        """Both left out: torch.distributed's (see :meth:`ranks`); else 0 of 1 by default."""
        if self.rank is None and self.world_size is None:
            return
        rank = check_int("rank", 0 if self.rank is None else self.rank, 0)
        world = check_int("world_size", 1 if self.world_size is None else self.world_size, 1)
        if rank >= world:
            raise HotsetError(f"rank {rank} is not below world_size {world}")
        self._set("rank", rank)
        self._set("world_size", world)

    @classmethod
    def from_kwargs(cls, options: Mapping[str, Any]) -> LoaderOptions:
        """The options from keywords; an unknown name is a ``TypeError`` naming the nearest.

        The DataLoader's keywords that have no option here (``shuffle=``, ``sampler=``,
        ...) are answered first: accepted as no-ops or refused with what the loader
        does instead (:mod:`hotset.torch.dlkeywords`).
        """
        known = [f.name for f in dataclasses.fields(cls)]
        options = take_dataloader_keywords(options)  # shuffle=, sampler=, ...: each answered
        for name in options:
            if name not in known:
                near = difflib.get_close_matches(str(name), [*known, *DATALOADER_ONLY], n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise TypeError(
                    f"hotset.loader got an unexpected keyword argument {name!r}{hint}; "
                    "the options are hotset.torch.options.LoaderOptions' fields"
                )
        return cls(**options)

    @property
    def lag(self) -> int:
        """Batches between a batch's planning and its feedback being applied."""
        return 0 if self.num_workers == 0 else self.num_workers * int(self.prefetch_factor or 0)

    def ranks(self) -> tuple[int, int]:
        """(rank, world size): as given, else torch.distributed's, else 0 of 1."""
        if self.rank is not None and self.world_size is not None:
            return self.rank, self.world_size
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
        return 0, 1


def describe_options(indent: str = "    ") -> str:
    """The options as reStructuredText definitions: name, type, default and meaning."""
    out = []
    for f in dataclasses.fields(LoaderOptions):
        head = f"``{f.name}`` ({f.type}, default ``{f.default!r}``)"
        body = textwrap.fill(
            f.metadata["doc"], width=88, initial_indent=indent * 2, subsequent_indent=indent * 2
        )
        out.append(f"{indent}{head}\n{body}")
    return "\n".join(out)
