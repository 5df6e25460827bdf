"""hotset.lightning: a Lightning Trainer drives the loader as a plain loop does.

Each run is a real ``Trainer.fit`` in this process (one CPU process; the
two-process DDP runs are the example's, tests/examples/test_lightning_example.py).
The module's per-sample "losses" are the deterministic stand-in ``loss_of`` and its
validation accuracy a fixed number per epoch, so a plain loop given the same
numbers must make the same decisions: the Lightning run is compared with it
batch for batch.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch_support import loss_of, run_epoch

import hotset
from hotset.errors import HotsetError

L = pytest.importorskip("lightning")
pl = pytest.importorskip("lightning.pytorch")
from hotset.lightning import HotsetCallback  # noqa: E402  (after the skip)

CONFIG: dict[str, Any] = {"cache": 0.25, "batch_size": 32, "seed": 4}


def _val_acc(epoch: int) -> float:
    return 0.25 + 0.125 * epoch


class _Module(pl.LightningModule):
    """A linear model; the losses given to hotset are ``loss_of``'s (or none at all)."""

    def __init__(self, *, per_sample: bool = True) -> None:
        super().__init__()
        self.net = torch.nn.Linear(3 * 8 * 8, 4)
        self.per_sample = per_sample

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y, ids, w = batch
        loss = (F.cross_entropy(self.net(x.flatten(1)), y, reduction="none") * w).mean()
        if not self.per_sample:
            return loss
        stand_in = torch.from_numpy(loss_of(ids.numpy(), self.current_epoch))
        return {"loss": loss, "per_sample_loss": stand_in}

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_acc", _val_acc(self.current_epoch))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


class _Recorder(pl.Callback):
    """The ids of every trained batch, per epoch."""

    def __init__(self) -> None:
        self.epochs: dict[int, list[int]] = {}

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self.epochs.setdefault(trainer.current_epoch, []).extend(batch[2].tolist())


def _loader(dataset_dir: Path, system: str, **options: Any) -> hotset.torch.HotsetLoader:
    data = hotset.open_dataset(dataset_dir, decode="image")
    return hotset.loader(data, system=system, **{**CONFIG, **options})


def _fit(
    root: Path,
    loader: hotset.torch.HotsetLoader,
    module: pl.LightningModule,
    *,
    epochs: int,
    callbacks: list[Any],
    ckpt_path: str | None = None,
) -> None:
    val = hotset.eval_loader(loader.data.subset(range(32)), batch_size=32)
    trainer = pl.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        devices=1,
        default_root_dir=root,
        callbacks=callbacks,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=any(isinstance(c, pl.callbacks.ModelCheckpoint) for c in callbacks),
    )
    trainer.fit(module, loader, val, ckpt_path=ckpt_path)


def _plain(dataset_dir: Path, system: str, epochs: int) -> tuple[dict[int, list[int]], list[Any]]:
    """The same epochs through a plain loop, with the same losses and accuracies."""
    with _loader(dataset_dir, system) as loader:
        served: dict[int, list[int]] = {}
        logs = []
        for epoch in range(epochs):
            served[epoch] = [i for b in run_epoch(loader, epoch) for i in b[2].tolist()]
            logs.append(loader.decisions().rows())
            loader.record_validation(_val_acc(epoch))
        return served, logs


@pytest.mark.parametrize("system", ["shade", "lru"])
def test_lightning_trains_the_batches_a_plain_loop_trains(
    dataset_dir: Path, tmp_path: Path, system: str
) -> None:
    """Failed before: Lightning's check iter() began an epoch (shade: train_loss nan at
    fit start; lru: every epoch one ahead of Lightning's)."""
    want, want_logs = _plain(dataset_dir, system, epochs=2)
    recorder = _Recorder()
    with _loader(dataset_dir, system) as loader:
        _fit(tmp_path, loader, _Module(), epochs=2, callbacks=[HotsetCallback(loader), recorder])
        assert recorder.epochs == want
        assert loader.decisions().rows() == want_logs[1]
        assert [row["epoch"] for row in loader.report()] == [0, 1]
        # epoch 0 closed with Lightning's logged accuracy (1 closes when 2 would begin)
        assert loader.system.val_accuracy == [_val_acc(0)]


def test_without_the_callback_a_learning_system_says_to_call_update(
    dataset_dir: Path, tmp_path: Path
) -> None:
    with (
        _loader(dataset_dir, "shade") as loader,
        pytest.raises(HotsetError, match=r"epoch 0 got none: after each step call"),
    ):
        _fit(tmp_path, loader, _Module(), epochs=2, callbacks=[])


def test_a_step_without_per_sample_losses_is_named(dataset_dir: Path, tmp_path: Path) -> None:
    with (
        _loader(dataset_dir, "shade") as loader,
        pytest.raises(HotsetError, match=r"training_step returned no 'per_sample_loss'"),
    ):
        module = _Module(per_sample=False)
        _fit(tmp_path, loader, module, epochs=1, callbacks=[HotsetCallback(loader)])


def test_resume_from_an_epoch_end_checkpoint_goes_on_exactly(
    dataset_dir: Path, tmp_path: Path
) -> None:
    """The checkpoint loads with torch.load's default (weights_only=True), and the
    resumed run trains the uninterrupted run's batches, with its accuracies."""
    first = _Recorder()
    saves = pl.callbacks.ModelCheckpoint(tmp_path / "ckpt", save_top_k=-1)
    with _loader(dataset_dir, "shade") as loader:
        callbacks = [HotsetCallback(loader), first, saves]
        _fit(tmp_path, loader, _Module(), epochs=3, callbacks=callbacks)
        want_val, want_loss = list(loader.system.val_accuracy), list(loader.system.train_loss)
    path = next((tmp_path / "ckpt").glob("epoch=0-*.ckpt"))
    checkpoint = torch.load(path)  # weights_only=True: no numpy object inside
    assert checkpoint["hotset"]["world_size"] == 1
    assert checkpoint["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]["hotset"]
    second = _Recorder()
    with _loader(dataset_dir, "shade") as loader:
        callbacks = [HotsetCallback(loader), second]
        _fit(tmp_path, loader, _Module(), epochs=3, callbacks=callbacks, ckpt_path=str(path))
        assert second.epochs == {1: first.epochs[1], 2: first.epochs[2]}
        assert loader.system.val_accuracy == want_val
        assert loader.system.train_loss == want_loss


def test_explicit_ranks_that_are_not_lightnings_are_refused(
    dataset_dir: Path, tmp_path: Path
) -> None:
    with (
        _loader(dataset_dir, "lru", rank=1, world_size=2) as loader,
        pytest.raises(HotsetError, match=r"rank=1, world_size=2, but it runs as rank 0 of 1"),
    ):
        _fit(tmp_path, loader, _Module(), epochs=1, callbacks=[HotsetCallback(loader)])


def test_bind_ranks_rebuilds_an_unused_loader_for_its_shard(dataset_dir: Path) -> None:
    with _loader(dataset_dir, "lru", rank=1, world_size=2) as direct:
        want = [i for b in run_epoch(direct, 0, feedback=False) for i in b[2].tolist()]
    with _loader(dataset_dir, "lru") as loader:
        assert (loader.rank, loader.world_size) == (0, 1)
        loader.bind_ranks(1, 2)
        assert (loader.rank, loader.world_size) == (1, 2)
        assert len(loader) == len(direct)
        got = [i for b in run_epoch(loader, 0, feedback=False) for i in b[2].tolist()]
        assert got == want
        with pytest.raises(HotsetError, match="already run epochs as rank 1 of 2"):
            loader.bind_ranks(0, 1)
        with pytest.raises(HotsetError, match=r"need 0 <= rank < world_size"):
            loader.bind_ranks(2, 2)


def test_hotset_imports_without_lightning() -> None:
    """Lightning is an optional extra: only hotset.lightning needs it, and says how."""
    code = (
        "import sys\n"
        "import hotset, hotset.torch\n"
        "assert 'lightning' not in sys.modules, 'import hotset imported lightning'\n"
        "sys.modules['lightning'] = None  # as if it were not installed\n"
        "try:\n"
        "    import hotset.lightning\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert "pip install 'hotset[lightning]'" in out


class _Builds(_Module):
    """Builds its loader in ``train_dataloader()``, as a DataModule-style script does."""

    def __init__(self, dataset_dir: Path, **options: Any) -> None:
        super().__init__()
        self.dataset_dir, self.options = dataset_dir, options
        self.built: list[hotset.torch.HotsetLoader] = []

    def train_dataloader(self) -> Any:
        self.built.append(_loader(self.dataset_dir, "lru", **self.options))
        return self.built[-1]


def test_a_loader_made_in_train_dataloader_is_found(dataset_dir: Path, tmp_path: Path) -> None:
    want, _ = _plain(dataset_dir, "lru", epochs=2)
    module, recorder = _Builds(dataset_dir), _Recorder()
    trainer = pl.Trainer(
        max_epochs=2,
        accelerator="cpu",
        devices=1,
        default_root_dir=tmp_path,
        callbacks=[HotsetCallback(), recorder],
        logger=False,
        enable_progress_bar=False,
        enable_checkpointing=False,
    )
    trainer.fit(module)
    (loader,) = module.built
    try:
        assert recorder.epochs == want
        assert [row["epoch"] for row in loader.report()] == [0, 1]
    finally:
        loader.close()


def test_a_found_loader_of_other_ranks_is_named(dataset_dir: Path, tmp_path: Path) -> None:
    module = _Builds(dataset_dir, rank=1, world_size=2)
    trainer = pl.Trainer(
        max_epochs=1,
        accelerator="cpu",
        devices=1,
        default_root_dir=tmp_path,
        callbacks=[HotsetCallback()],
        logger=False,
        enable_progress_bar=False,
        enable_checkpointing=False,
    )
    try:
        with pytest.raises(HotsetError, match=r"runs as rank 1 of 2, but Lightning trains rank 0"):
            trainer.fit(module)
    finally:
        for loader in module.built:
            loader.close()


def test_a_batch_without_ids_names_the_batch_shapes_that_carry_them() -> None:
    from hotset.errors import HotsetError
    from hotset.lightning.callback import _ids_of

    with pytest.raises(HotsetError, match=r"batch='dict'.*outputs\['ids'\]"):
        _ids_of((torch.zeros(2), torch.zeros(2)), "ids")
    assert _ids_of({"x": 1, "ids": [4, 5]}, "ids") == [4, 5]
