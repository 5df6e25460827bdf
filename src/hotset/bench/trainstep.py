"""A real training step for the pipeline benchmark: a model, its loss, backward, SGD.

Why a real one: the question is whether the data path keeps an accelerator busy,
and only a real model step on that accelerator answers it -- a sleep takes no GPU
time, holds no memory bandwidth and launches no kernels from the training process.

``resnet50`` is torchvision's, untrained (``weights=None``), when torchvision
imports; ``small`` a three-layer convnet defined here, for CPU runs and tests. On
CUDA the step runs under bf16 autocast with channels_last tensors (the issue's
H100 settings); on a CPU in float32. It never synchronizes the device itself:
the training process may queue the next batch's work while this one runs, as a
real loop does; :meth:`TrainStep.sync` waits where a timing needs it.
"""

from __future__ import annotations

import time
from typing import Any

from hotset.errors import HotsetError

__all__ = ["MODELS", "TrainStep", "build_model", "model_only"]

#: the models :func:`build_model` knows (``auto``: resnet50 where torchvision imports)
MODELS = ("auto", "resnet50", "small")


def _small(classes: int) -> Any:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(16, 32, 3, stride=2, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
        nn.Conv2d(32, 64, 3, stride=2, padding=1),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, classes),
    )


def build_model(name: str, classes: int) -> tuple[Any, str]:
    """The model called ``name`` (on the CPU) and the name it resolved to."""
    from hotset.vision.decode import torchvision_decodes

    if name not in MODELS:
        raise HotsetError(f"model must be one of {', '.join(MODELS)}, got {name!r:.80}")
    if name == "auto":
        name = "resnet50" if torchvision_decodes() else "small"
    if name == "small":
        return _small(classes), name
    try:
        from torchvision.models import resnet50
    except Exception as exc:  # not installed, or a binary that fails beside this torch
        raise HotsetError(
            f"model 'resnet50' needs torchvision, which does not import: {exc}"
        ) from None
    return resnet50(weights=None, num_classes=classes), name


class TrainStep:
    """One SGD step on a batch: forward, per-sample cross-entropy, backward, update."""

    def __init__(self, model: Any, device: Any, *, bf16: bool, channels_last: bool) -> None:
        import torch

        self.device = torch.device(device)
        self.bf16 = bf16
        self.channels_last = channels_last
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        self.model = model.to(self.device, memory_format=fmt).train()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)

    def __call__(self, x: Any, y: Any) -> Any:
        """Train on ``(x, y)``; returns the per-sample losses (on the device, detached)."""
        import torch
        import torch.nn.functional as F

        from hotset.vision.transfer import to_device

        x = to_device(x, self.device)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        y = to_device(y, self.device)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            out = self.model(x)
        loss = F.cross_entropy(out.float(), y, reduction="none")
        loss.mean().backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    def sync(self) -> None:
        """Wait for the device to finish what was queued (a timing's edge)."""
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def model_only(step: TrainStep, *, batch_size: int, size: int, classes: int, steps: int) -> float:
    """Samples/s of ``steps`` steps on one batch already on the device (after 3 warm-up
    steps, which also let cuDNN pick its kernels): the accelerator's own limit."""
    import torch

    g = torch.Generator().manual_seed(0)
    x = torch.randn((batch_size, 3, size, size), generator=g).to(step.device)
    if step.channels_last:  # as the data paths deliver it on a GPU: no copy per step
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, classes, (batch_size,), generator=g).to(step.device)
    for _ in range(3):
        step(x, y)
    step.sync()
    start = time.perf_counter()
    for _ in range(steps):
        step(x, y)
    step.sync()
    return steps * batch_size / (time.perf_counter() - start)
