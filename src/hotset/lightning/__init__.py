"""hotset under Lightning: ``HotsetCallback`` drives a hotset loader from a Trainer.

Two lines in a Lightning script (docs/usage.md, "Lightning")::

    from hotset.lightning import HotsetCallback
    trainer = L.Trainer(..., callbacks=[HotsetCallback(train_loader)])

with ``train_loader = hotset.loader(...)`` given to ``trainer.fit`` and
``training_step`` returning ``{"loss": ..., "per_sample_loss": loss}``.

An optional extra (``pip install 'hotset[lightning]'``): ``import hotset``
never imports Lightning; this module does, and says how to install it when
it is missing.
"""

from __future__ import annotations

try:
    import lightning.pytorch  # noqa: F401  (the check; the callback imports what it uses)
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "hotset.lightning needs Lightning (the 'lightning' package, 2.2 or later): "
        "pip install 'hotset[lightning]'"
    ) from exc

from hotset.lightning.callback import HotsetCallback

__all__ = ["HotsetCallback"]
