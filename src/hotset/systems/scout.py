"""Scout (hotset's own): importance sampling's order, chunk reads' request count, no wasted bytes.

The seed systems split in two families: the importance samplers (SHADE, iCACHE,
ImPACT) train on fewer, harder samples but read every miss alone, one request
each; the chunk systems (Quiver, Brand) read one request per chunk but in an
order that ignores importance, and Brand reads the whole chunk for the few
members it keeps. Scout takes the importance sampler's order as it is (iCACHE's
IIS rule, with the coverage guard on) and changes only how its misses are read:
:class:`hotset.policies.scout.Scout` looks ahead over the planned order and
fetches, in one ranged request per chunk, only the members the order asks for
soon (``docs/systems/scout.md`` has the design, the guarantees and the ablations).

Options (``scout[lookahead=1.8,ranged=true,stagger=true,preview=horizon,ramp=0.5,...]``):

* ``lookahead``: the horizon, in multiples of the samples the cache holds;
  0 reads every miss alone (the importance family's reads: the ablation row);
* ``ranged``: fetch members by byte range (true) or the whole chunk (false:
  Brand's bytes, the ablation row);
* ``stagger``: each chunk's first window of an epoch a share of the horizon of its
  own, so that windows do not all renew together (false: the ablation row);
* ``preview``: how far into the next epoch's permutation (a superset of its order)
  the epoch's last windows may fetch: ``horizon`` (the default) as far as a window
  reaches, so that every chunk's window goes on across the epoch boundary and the
  next epoch starts with no burst of requests; or a number of batches (0: off, the
  ablation row);
* ``ramp``: a cold cache's horizon starts at this share of its length and grows to
  all of it over the first epoch, so the first batches do not read the whole
  fetched-ahead stock while every sample misses (0.5; 1: off, the ablation row);
* ``sampler``: ``iis`` (iCACHE's importance sampling), ``random`` (a uniform
  permutation of every id: the ablation row without importance) or ``rho`` (IIS's
  full epochs, its selection epochs keeping the ``rho_share`` of highest reducible
  loss, RHO-loss: :mod:`hotset.samplers.rho`; ``irreducible=PATH`` or
  ``loader.system.set_irreducible`` gives the irreducible losses);
* ``beta``, ``window``, ``warm_up``, ``reuse_factor``: IIS's own
  (:mod:`hotset.samplers.iis`); ``coverage_epochs``: every id asked for at least
  once in that many epochs (10; 0 turns the guard off).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hotset.engine.budget import Budget
from hotset.errors import HotsetError
from hotset.importance.scorers import LossScorer
from hotset.importance.table import ImportanceTable
from hotset.policies.scout import Scout
from hotset.policies.scout.rounds import LANES, ScoutRounds
from hotset.samplers.base import EpochContext, IntArray, Sampler
from hotset.samplers.iis import (
    BETA,
    DEFAULT_COVERAGE_EPOCHS,
    REUSE_FACTOR,
    WARM_UP,
    WINDOW,
    IISSampler,
)
from hotset.samplers.random import RandomSampler
from hotset.samplers.rho import RHO_SHARE, irreducible_option
from hotset.samplers.shard import shard
from hotset.systems.base import System, SystemSpec, with_defaults
from hotset.systems.options import SystemOption, declare

SAMPLERS = ("iis", "random", "rho")
#: how the sampler's ids are served: in rounds of chunk pieces (the set, arranged by
#: chunk) or in the order drawn (lookahead windows)
SERVES = ("rounds", "order")
#: the options only ``serve=order`` reads (its lookahead windows)
ORDER_ONLY = ("lookahead", "ranged", "stagger", "preview", "ramp")
DEFAULTS: dict[str, Any] = {
    "serve": SERVES[0],
    "lanes": LANES,
    "lookahead": 1.8,
    "ranged": True,
    "stagger": True,
    "preview": "horizon",
    "ramp": 0.5,
    "sampler": "iis",
    "beta": BETA,
    "window": WINDOW,
    "warm_up": WARM_UP,
    "reuse_factor": REUSE_FACTOR,
    "coverage_epochs": DEFAULT_COVERAGE_EPOCHS,
    "rho_share": RHO_SHARE,
    "irreducible": None,
}


def _check(opts: dict[str, Any]) -> None:
    """Ranges the option types cannot say (each error names the option and the value)."""
    preview = opts["preview"]
    if preview != "horizon" and (
        isinstance(preview, bool) or not isinstance(preview, int) or preview < 0
    ):
        raise HotsetError(
            f"system 'scout': preview must be 'horizon' or an integer >= 0, got {preview!r}"
        )
    look = opts["lookahead"]
    if isinstance(look, bool) or not isinstance(look, int | float) or not math.isfinite(look):
        raise HotsetError(f"system 'scout': lookahead must be a number >= 0, got {look!r}")
    if look < 0:
        raise HotsetError(f"system 'scout': lookahead must be >= 0, got {look!r}")
    ramp = opts["ramp"]
    if isinstance(ramp, bool) or not isinstance(ramp, int | float) or not 0 < ramp <= 1:
        raise HotsetError(f"system 'scout': ramp must be a number in (0, 1], got {ramp!r}")
    for key in ("ranged", "stagger"):
        if not isinstance(opts[key], bool):
            raise HotsetError(f"system 'scout': {key} must be true or false, got {opts[key]!r}")
    if opts["serve"] not in SERVES:
        raise HotsetError(
            f"system 'scout': serve must be one of {', '.join(SERVES)}, got {opts['serve']!r}"
        )
    lanes = opts["lanes"]
    if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1:
        raise HotsetError(f"system 'scout': lanes must be an integer >= 1, got {lanes!r}")
    for key in ORDER_ONLY if opts["serve"] == "rounds" else ("lanes",):
        if opts[key] != DEFAULTS[key]:
            other = "order" if opts["serve"] == "rounds" else "rounds"
            raise HotsetError(
                f"system 'scout': {key}={opts[key]!r} applies to serve={other}, "
                f"not serve={opts['serve']}"
            )
    if opts["sampler"] not in SAMPLERS:
        raise HotsetError(
            f"system 'scout': sampler must be one of {', '.join(SAMPLERS)}, got {opts['sampler']!r}"
        )


class _Preview:
    """Has the policy arrange the epoch's ids in rounds (``serve=rounds``), or tells it
    the next epoch's permutation when an epoch's order is drawn (``serve=order``).

    Both samplers draw ``epoch_rng(epoch).permutation(n)`` and keep some of it (IIS)
    or all of it (random), so the next epoch's permutation, sharded as the order
    will be, is a superset of its order in the same relative order.
    """

    policy: Scout | None = None

    def order(self, ctx: EpochContext) -> IntArray:
        out: IntArray = super().order(ctx)  # type: ignore[misc]
        if isinstance(self.policy, ScoutRounds):
            return self.policy.arrange(out, ctx.epoch)
        if self.policy is not None and self.policy.preview:
            inner: Sampler = self  # type: ignore[assignment]
            nxt = inner.epoch_rng(ctx.epoch + 1).permutation(inner.n).astype(np.int64)
            self.policy.set_preview(shard(nxt, ctx.rank, ctx.world_size))
        return out


class _PreviewIIS(_Preview, IISSampler):
    pass


class _PreviewRandom(_Preview, RandomSampler):
    pass


def _sampler(n: int, seed: int, opts: dict[str, Any]) -> _PreviewIIS | _PreviewRandom:
    rho = irreducible_option("scout", n, rho=opts["sampler"] == "rho", path=opts["irreducible"])
    if opts["sampler"] == "random":
        return _PreviewRandom(n, seed=seed)
    return _PreviewIIS(
        n,
        seed=seed,
        beta=opts["beta"],
        window=opts["window"],
        warm_up=opts["warm_up"],
        reuse_factor=opts["reuse_factor"],
        coverage_epochs=opts["coverage_epochs"],
        rho=rho,
        rho_share=opts["rho_share"],
    )


def build_scout(
    *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
) -> System:
    """Scout: IIS's order (coverage guarded), misses fetched by chunk-ranged lookahead."""
    opts = with_defaults("scout", options, DEFAULTS)
    _check(opts)
    sampler = _sampler(n, seed, opts)
    policy: Scout
    if opts["serve"] == "rounds":
        policy = ScoutRounds(budget, seed=seed, lanes=opts["lanes"])
    else:
        policy = Scout(
            budget,
            seed=seed,
            lookahead=opts["lookahead"],
            ranged=opts["ranged"],
            stagger=opts["stagger"],
            preview=None if opts["preview"] == "horizon" else opts["preview"] * batch_size,
            ramp=opts["ramp"],
        )
    sampler.policy = policy
    return System(
        name="scout",
        sampler=sampler,
        policy=policy,
        table=ImportanceTable(n),
        scorer=LossScorer(),
        options={"batch_size": batch_size, **opts},
    )


SPECS: list[SystemSpec] = [
    SystemSpec(
        "scout",
        "hotset's own: an importance sampler's order, its misses fetched ahead in one ranged "
        "request per chunk (only the members due soon)",
        "hotset (docs/systems/scout.md)",
        build_scout,
    ),
]

_DOCS: dict[str, tuple[str, str]] = {
    "serve": (
        "|".join(SERVES),
        "rounds: the sampler's set arranged by chunk, each chunk's selected members one "
        "ranged request, lanes requests a round, the rest of the cache a static set; order: "
        "the order as drawn, misses fetched with their chunk's members due within lookahead",
    ),
    "lanes": ("int", "serve=rounds: requests one round issues at once (the store's in flight)"),
    "lookahead": (
        "number",
        "horizon in multiples of the samples the cache holds (0: every miss read alone)",
    ),
    "ranged": ("bool", "fetch members by byte range (false: whole chunks, as Brand reads)"),
    "stagger": (
        "bool",
        "each chunk's first window of an epoch a share of the horizon of its own (false: "
        "every window a whole horizon, renewing together)",
    ),
    "preview": (
        "int|horizon",
        "how far the last windows may fetch into the next epoch's permutation: horizon (as "
        "far as a window reaches; windows go on across the boundary) or batches (0: none)",
    ),
    "ramp": (
        "number",
        "a cold cache's horizon starts at this share of the full one and grows to it over "
        "the first epoch (1: no ramp)",
    ),
    "sampler": (
        "|".join(SAMPLERS),
        "iis: iCACHE's importance sampling; random: every id; rho: IIS's schedule, selecting "
        "the top rho_share by reducible loss (RHO-loss)",
    ),
    "beta": ("number", "IIS: keep with percentile(loss) ** beta"),
    "window": ("int", "IIS: losses in the sliding window a percentile is taken over"),
    "warm_up": ("int", "IIS: full epochs before the first selection"),
    "reuse_factor": ("int", "IIS: every reuse_factor-th epoch is full"),
    "coverage_epochs": (
        "int",
        "every id asked for at least once in this many epochs (0: off)",
    ),
    "rho_share": ("number", "sampler=rho: share of the ids with a known loss kept"),
    "irreducible": (
        "none|path",
        "sampler=rho: .npy array of one irreducible loss per id (none: set later with "
        "loader.system.set_irreducible; the simulators train a held-out model)",
    ),
}
OPTIONS: dict[str, tuple[SystemOption, ...]] = {"scout": declare(DEFAULTS, _DOCS)}
