"""``HotsetCallback``: what a hotset loader needs from a Lightning training run.

A plain loop calls ``set_epoch``, ``update``, ``record_validation`` and
``state_dict`` itself (README, "Usage"). Under Lightning the loop is the
Trainer's, so this callback makes those calls at the matching hooks:

* ``setup`` (fit): the loader is bound to Lightning's rank and world size
  (:meth:`~hotset.torch.loader.HotsetLoader.bind_ranks`): a loader built in the
  script, before ``trainer.fit`` started the DDP processes, could not know them;
* ``on_train_epoch_start``: ``set_epoch(trainer.current_epoch)`` (Lightning
  never calls it on a loader that is not a DataLoader);
* ``on_train_batch_end``: the per-sample losses ``training_step`` returned under
  ``"per_sample_loss"`` go to ``update``, keyed by the batch's ids;
* ``on_validation_end``: the logged ``"val_acc"``, if any, goes to
  ``record_validation`` (before ModelCheckpoint saves, which Lightning runs last);
* ``on_save_checkpoint``/``on_load_checkpoint``: every rank's loader state in
  the checkpoint, in types ``torch.load(weights_only=True)`` accepts, restored on
  ``trainer.fit(ckpt_path=...)`` so the run goes on with the same batches
  (:mod:`hotset.lightning.states` says how and why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.trainer.states import TrainerFn

from hotset.errors import HotsetError
from hotset.lightning.states import (
    from_plain,
    gather,
    mark_loop_entry,
    restore_loop_entry,
    to_plain,
)
from hotset.torch.loader import HotsetLoader

__all__ = ["HotsetCallback"]


class HotsetCallback(pl.Callback):
    """Drive a :class:`~hotset.torch.loader.HotsetLoader` from a Lightning Trainer.

    ``loader`` is the loader given to ``trainer.fit``; leave it out when a
    ``train_dataloader()`` hook builds it (it is then found among the Trainer's
    train loaders). ``training_step`` returns the per-sample losses beside the
    loss, e.g. ``{"loss": (loss * w).mean(), "per_sample_loss": loss}`` with
    ``loss`` computed with ``reduction="none"``; the ids are the batch's
    (``x, y, ids, w``), or ``outputs["ids"]`` when given. ``val_metric`` is the
    name logged with ``self.log`` in validation whose value is the accuracy the
    system is told (None: none).
    """

    def __init__(
        self,
        loader: HotsetLoader | None = None,
        *,
        loss_key: str = "per_sample_loss",
        ids_key: str = "ids",
        val_metric: str | None = "val_acc",
    ) -> None:
        if loader is not None and not isinstance(loader, HotsetLoader):
            raise HotsetError(
                f"HotsetCallback: loader must be a hotset loader (hotset.loader(...)) or "
                f"None, got {type(loader).__name__}"
            )
        for name, value in (("loss_key", loss_key), ("ids_key", ids_key)):
            if not isinstance(value, str) or not value:
                raise HotsetError(f"HotsetCallback: {name} must be a non-empty str, got {value!r}")
        if val_metric is not None and not isinstance(val_metric, str):
            raise HotsetError(
                f"HotsetCallback: val_metric must be a str or None, got {val_metric!r}"
            )
        self._given = loader
        self.loss_key = loss_key
        self.ids_key = ids_key
        self.val_metric = val_metric
        #: this rank's loader state from the checkpoint a fit resumes from
        self._pending: dict[str, Any] | None = None

    # -- finding the loader -------------------------------------------------------------
    def loader(self, trainer: pl.Trainer) -> HotsetLoader:
        """The loader this callback drives: the one given, else the Trainer's."""
        if self._given is not None:
            return self._given
        found = [dl for dl in _flat(trainer.train_dataloader) if isinstance(dl, HotsetLoader)]
        if len(found) != 1:
            raise HotsetError(
                f"HotsetCallback: found {len(found)} hotset loaders among the trainer's train "
                "loaders; pass the one to drive: HotsetCallback(loader)"
            )
        return found[0]

    # -- the hooks ----------------------------------------------------------------------
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        """Bind a given loader to this process's rank (the process group exists now)."""
        if stage == TrainerFn.FITTING and self._given is not None:
            self._given.bind_ranks(trainer.global_rank, trainer.world_size)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Check the loader's ranks; restore the state a resumed fit brought.

        Restored here, not left to Lightning: Lightning restores train loaders only
        when the checkpoint's epoch was unfinished, but an epoch-end checkpoint holds
        what the system learned too. The epoch's iterator exists by now and has not
        yielded, so it goes on from the restored state.
        """
        loader = self.loader(trainer)
        if (loader.rank, loader.world_size) != (trainer.global_rank, trainer.world_size):
            raise HotsetError(
                f"the hotset loader runs as rank {loader.rank} of {loader.world_size}, but "
                f"Lightning trains rank {trainer.global_rank} of {trainer.world_size}: pass "
                "the loader to HotsetCallback(loader), which binds it to Lightning's ranks"
            )
        state, self._pending = self._pending, None
        if state is not None:
            loader.load_state_dict(state)

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.loader(trainer).set_epoch(trainer.current_epoch)

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        loader = self.loader(trainer)
        if not isinstance(outputs, Mapping) or self.loss_key not in outputs:
            if loader.system.capabilities.learns:
                raise HotsetError(
                    f"system {loader.system.name!r} learns from per-sample losses, but "
                    f"training_step returned no {self.loss_key!r}: compute the loss with "
                    "reduction='none' and return {'loss': (loss * w).mean(), "
                    f"{self.loss_key!r}: loss}}; or pick a system that does not learn (lru, quiver)"
                )
            return
        ids = outputs[self.ids_key] if self.ids_key in outputs else _ids_of(batch, self.ids_key)
        loader.update(_host(ids), _host(outputs[self.loss_key]))

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.val_metric is None or trainer.sanity_checking:
            return
        if trainer.state.fn != TrainerFn.FITTING:
            return  # trainer.validate(): no training epoch to attach it to
        value = trainer.callback_metrics.get(self.val_metric)
        if value is not None:
            self.loader(trainer).record_validation(float(value))

    def on_save_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        """Every rank's state (a collective: Lightning dumps on every rank, rank 0 writes)."""
        loader = self.loader(trainer)
        states = gather(to_plain(loader.state_dict()), trainer.world_size)
        checkpoint["hotset"] = {"world_size": trainer.world_size, "ranks": states}
        mark_loop_entry(checkpoint, _position(trainer, loader))

    def on_load_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        """Take this rank's state (restored at ``on_train_start``)."""
        saved = checkpoint.get("hotset")
        if saved is None or trainer.state.fn != TrainerFn.FITTING:
            return
        world = saved.get("world_size") if isinstance(saved, Mapping) else None
        if world != trainer.world_size:
            raise HotsetError(
                f"the checkpoint holds the hotset loader states of {world} ranks, but this "
                f"run has {trainer.world_size}: resume with as many processes as saved it"
            )
        self._pending = from_plain(saved["ranks"][trainer.global_rank])
        restore_loop_entry(checkpoint, self._pending)


def _flat(iterables: Any) -> list[Any]:
    """The loaders in what ``trainer.train_dataloader`` holds (one, a sequence or a dict)."""
    if iterables is None:
        return []
    if isinstance(iterables, Mapping):
        return [x for v in iterables.values() for x in _flat(v)]
    if isinstance(iterables, list | tuple):
        return [x for v in iterables for x in _flat(v)]
    return [iterables]


def _position(trainer: pl.Trainer, loader: HotsetLoader) -> int | None:
    """Where ``loader`` is among the train loaders whose states Lightning saves itself."""
    combined = getattr(trainer.fit_loop, "_combined_loader", None)
    if combined is None:
        return None
    stateful = [
        dl
        for dl in combined.flattened
        if callable(getattr(dl, "state_dict", None))
        and callable(getattr(dl, "load_state_dict", None))
    ]
    return next((i for i, dl in enumerate(stateful) if dl is loader), None)


def _ids_of(batch: Any, key: str) -> Any:
    """A batch's sample ids: ``batch[key]``, ``batch.ids`` or the third of ``(x, y, ids, w)``."""
    if isinstance(batch, Mapping) and key in batch:
        return batch[key]
    if hasattr(batch, key):
        return getattr(batch, key)
    if isinstance(batch, Sequence) and len(batch) == 4:
        return batch[2]
    raise HotsetError(
        f"HotsetCallback: cannot find the sample ids in a batch of type {type(batch).__name__} "
        "(a batch='xy' loader drops them, and loader.last_ids is already the next batch's "
        "under Lightning, which fetches a batch ahead); build the loader with batch='dict' or "
        f"the default (x, y, ids, w), or return the ids from training_step as outputs[{key!r}]"
    )


def _host(value: Any) -> Any:
    """A tensor detached and on the CPU, where ``update`` reads it; anything else as is."""
    return value.detach().cpu() if isinstance(value, torch.Tensor) else value
