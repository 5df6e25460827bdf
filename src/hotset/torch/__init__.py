"""hotset.torch: the real loader -- PyTorch's DataLoader driven by a hotset System.

``open_dataset`` opens a dataset (manifest + store + decoding); ``loader`` builds
a :class:`HotsetLoader` that yields ``(x, y, ids, w)`` batches, takes per-sample
losses back with ``update(ids, losses)`` and checkpoints with ``state_dict``.
"""

from hotset.engine.plan import BatchPlan
from hotset.torch.dataset import HotsetDataset, open_dataset
from hotset.torch.loader import HotsetLoader, loader

__all__ = ["BatchPlan", "HotsetDataset", "HotsetLoader", "loader", "open_dataset"]
