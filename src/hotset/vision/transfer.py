"""Host-to-device copies that never make the CPU wait for the device's queue.

Why this matters: on a GPU the training process runs ahead of the device, queuing
the next batch's decode, crop and model step while the current step still runs;
that lead is what hides the data path behind the model. A copy from ordinary
(pageable) host memory to a CUDA device may synchronize with the stream
(``tensor.to("cuda")`` without ``non_blocking`` always does), so one small
tensor -- a mean, a filter matrix -- would drain the queue every batch. Every
copy here goes through pinned memory (torch's caching host allocator keeps the
block until its copy is done) and is asynchronous.
"""

from __future__ import annotations

from typing import Any

__all__ = ["to_device"]


def to_device(tensor: Any, device: Any) -> Any:
    """``tensor`` on ``device``; to a CUDA device pinned first and copied asynchronously."""
    import torch

    where = torch.device(device)
    if tensor.device == where:
        return tensor
    if where.type == "cuda" and tensor.device.type == "cpu":
        src = tensor if tensor.is_pinned() else tensor.pin_memory()
        return src.to(where, non_blocking=True)
    return tensor.to(where)
