"""SHADE's loss decomposition (FAST'23 §4.2.1, Eq. 3-5).

A minibatch's loss is the mean of its samples' cross-entropies (Eq. 5), so the
per-sample terms (Eq. 3, with the softmax of Eq. 4) are what training already
computes before the reduction. Asking for them costs nothing extra and gives
each sample its own importance instead of the batch's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hotset.errors import HotsetError

if TYPE_CHECKING:
    import torch


def per_sample_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each sample (``reduction='none'``); ``.mean()`` is the batch loss.

    ``logits`` is ``(S, T)`` raw scores for S samples and T classes, ``targets``
    the ``S`` class indices. The result keeps the autograd graph, so
    ``per_sample_cross_entropy(...).mean().backward()`` trains as usual while
    ``.detach()`` feeds the importance table.
    """
    import torch.nn.functional as F

    if logits.ndim != 2:
        raise HotsetError(f"logits must be (samples, classes), got shape {tuple(logits.shape)}")
    if targets.ndim != 1 or targets.shape[0] != logits.shape[0]:
        raise HotsetError(
            f"targets must hold one class per sample ({logits.shape[0]}), "
            f"got shape {tuple(targets.shape)}"
        )
    return F.cross_entropy(logits, targets, reduction="none")
