"""hotset.torch: the real loader -- PyTorch's DataLoader driven by a hotset System.

``open_dataset`` opens a dataset (manifest + store + decoding), ``from_dataset``
wraps the user's own map-style Dataset, ``eval_loader`` is a plain validation
DataLoader; ``loader`` builds
a :class:`HotsetLoader` that yields ``(x, y, ids, w)`` batches, takes per-sample
losses back with ``update(ids, losses)`` and checkpoints with ``state_dict``;
:class:`LoaderOptions` lists (and checks) every option it takes.
"""

from hotset.engine.plan import BatchPlan
from hotset.torch.dataset import HotsetDataset, open_dataset
from hotset.torch.evaluation import eval_loader
from hotset.torch.loader import HotsetLoader, loader
from hotset.torch.options import LoaderOptions
from hotset.torch.user import from_dataset

__all__ = [
    "BatchPlan",
    "HotsetDataset",
    "HotsetLoader",
    "LoaderOptions",
    "eval_loader",
    "from_dataset",
    "loader",
    "open_dataset",
]
