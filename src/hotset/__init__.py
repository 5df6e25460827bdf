"""hotset: make a small memory cache worth having for deep-learning training.

The package is organised as one engine with two drivers: pure, deterministic
policies and samplers (``hotset.policies``, ``hotset.samplers``) are driven either
by the simulator (``hotset.sim``, virtual clock) or by the real loader.
"""

from hotset.errors import HotsetError

__version__ = "0.1.0"

__all__ = ["HotsetError", "__version__"]
