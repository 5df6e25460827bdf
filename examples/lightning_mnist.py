"""The classic Lightning training script shape, on scikit-learn's digits, ported to hotset.

``diff -u examples/lightning_mnist_plain.py examples/lightning_mnist.py`` shows every
line the port changes. Run: ``python examples/lightning_mnist.py --system shade``
(``--devices 2`` trains with DDP on two CPU processes; ``--ckpt-path`` resumes exactly).
"""

import argparse
import os
import tempfile

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader

import hotset
from hotset.data import make_digits
from hotset.lightning import HotsetCallback
from mnist_style import Net


class LitNet(L.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.net = Net()
        self.lr = lr

    def training_step(self, batch, batch_idx):
        x, y, ids, w = batch
        losses = F.nll_loss(self.net(x), y, reduction="none")
        loss = (losses * w).mean()
        self.log("train_loss", loss)
        return {"loss": loss, "per_sample_loss": losses}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        accuracy = (self.net(x).argmax(dim=1) == y).float().mean()
        self.log("val_acc", accuracy, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def main(argv=None, callbacks=()):
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--system", default="shade")
    parser.add_argument("--devices", type=int, default=1, help="CPU processes (2 or more: DDP)")
    parser.add_argument("--data", default=None, help="A digits directory (made if absent).")
    parser.add_argument("--out", default="lightning-out", help="Logs and checkpoints.")
    parser.add_argument("--save-every", type=int, default=None, help="Checkpoint every N steps.")
    parser.add_argument("--ckpt-path", default=None, help="Resume from this checkpoint.")
    args = parser.parse_args(argv)
    L.seed_everything(args.seed)
    root = args.data or os.path.join(tempfile.gettempdir(), f"hotset-digits-{os.getuid()}")
    if not os.path.exists(os.path.join(root, "manifest.csv")):
        make_digits(root, force=True)  # DDP's other processes start later, in fit
    everything = hotset.open_dataset(root, decode="image")
    val_set = everything.subset(range(0, len(everything), 10))
    train_set = everything.subset([i for i in range(len(everything)) if i % 10])

    train_loader = hotset.loader(train_set, system=args.system, batch_size=args.batch_size, num_workers=args.workers, seed=args.seed)
    val_loader = DataLoader(val_set, batch_size=256)
    checkpoints = ModelCheckpoint(os.path.join(args.out, "checkpoints"), every_n_train_steps=args.save_every, save_top_k=-1)
    trainer = L.Trainer(
        max_epochs=args.epochs,
        accelerator="cpu",
        devices=args.devices,
        strategy="ddp" if args.devices > 1 else "auto",
        default_root_dir=args.out,
        callbacks=[checkpoints, HotsetCallback(train_loader), *callbacks],
        enable_progress_bar=False,
    )
    trainer.fit(LitNet(args.lr), train_loader, val_loader, ckpt_path=args.ckpt_path)
    accuracy = float(trainer.callback_metrics["val_acc"])
    print(f"rank {trainer.global_rank} of {trainer.world_size}: final accuracy {accuracy:.4f}")
    print(train_loader.summary())
    return accuracy


if __name__ == "__main__":
    main()
