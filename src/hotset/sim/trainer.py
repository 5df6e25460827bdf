"""The live simulator's model: one network, one optimiser, a step and an evaluation.

Why its own module: the simulator trains on the CPU by default (a small model, one
thread, so the JSON does not depend on the machine) and, for the device-ready
benchmark (``benchmarks/gpu/importance.sh``), on an accelerator: the images and the
model move to ``device`` once, and a CUDA step runs under bf16 autocast with
``channels_last`` (the usual fast path of a ResNet on a GPU). Every method returns
numpy on the host, so the driver (decisions, counters, the modeled clock) is the
same on both.

Training: SGD (momentum 0.9, weight decay 5e-4), learning rate cosine-annealed per
epoch, no augmentation, per-sample cross-entropy weighted by the system's weights.
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray

_EVAL_BATCH = 1024


class Trainer:
    """One model on ``device``; a weighted per-sample-loss step and an evaluation."""

    def __init__(
        self,
        *,
        net: Any,
        x_train: Any,
        y_train: Any,
        x_val: Any,
        y_val: Any,
        lr: float,
        epochs: int,
        device: str = "cpu",
    ) -> None:
        import torch

        from hotset.importance.loss import per_sample_cross_entropy

        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        fmt = torch.channels_last if self.cuda and x_train.dim() == 4 else torch.contiguous_format
        self.net = net.to(self.device, memory_format=fmt)
        self.x_train = x_train.to(self.device).contiguous(memory_format=fmt)
        self.y_train = y_train.to(self.device)
        self.x_val = x_val.to(self.device).contiguous(memory_format=fmt)
        self.y_val = y_val.to(self.device)
        self.base_lr = lr
        self.epochs = epochs
        self.opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
        self.loss_fn = per_sample_cross_entropy

    def autocast(self) -> AbstractContextManager[Any]:
        """bf16 autocast on a CUDA device; nothing on the CPU (its JSON stays float32)."""
        import torch

        return torch.autocast("cuda", dtype=torch.bfloat16) if self.cuda else nullcontext()

    def _index(self, ids: IntArray) -> Any:
        import torch

        return torch.from_numpy(np.asarray(ids, dtype=np.int64)).to(self.device)

    def set_epoch(self, epoch: int) -> None:
        lr = self.base_lr * 0.5 * (1.0 + math.cos(math.pi * epoch / self.epochs))
        for group in self.opt.param_groups:
            group["lr"] = lr

    def step(self, ids: IntArray, weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Train on training ids ``ids``; return their per-sample losses (before the step).

        The losses come back to the host, which waits for the device: a step's wall
        time is its compute."""
        import torch

        index = self._index(ids)
        self.net.train()
        with self.autocast():
            losses = self.loss_fn(self.net(self.x_train[index]), self.y_train[index])
        w = torch.as_tensor(np.asarray(weights, dtype=np.float32), device=self.device)
        loss = (losses.float() * w).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return np.asarray(losses.detach().double().cpu().numpy(), dtype=np.float64)

    def forward_losses(self, ids: IntArray) -> npt.NDArray[np.float64]:
        """Per-sample losses of ``ids`` from a forward pass, no training step (ImPACT's S)."""
        import torch

        self.net.eval()
        out = []
        # one pass on the CPU (the float sums, hence the JSON, as they always were)
        step = _EVAL_BATCH if self.cuda else max(1, len(ids))
        with torch.no_grad(), self.autocast():
            for start in range(0, len(ids), step):
                index = self._index(ids[start : start + step])
                losses = self.loss_fn(self.net(self.x_train[index]), self.y_train[index])
                out.append(losses.double().cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float64)

    def accuracy(self) -> float | None:
        import torch

        n = len(self.y_val)
        if n == 0:
            return None
        self.net.eval()
        correct = 0
        with torch.no_grad(), self.autocast():
            for start in range(0, n, _EVAL_BATCH):
                logits = self.net(self.x_val[start : start + _EVAL_BATCH])
                pred = logits.argmax(dim=1)
                correct += int((pred == self.y_val[start : start + _EVAL_BATCH]).sum())
        return correct / n


__all__ = ["Trainer"]
