"""What a policy or system needs from a driver, declared instead of guessed.

Drivers (the trace simulator, the live-training simulator, the loader) read
these flags and never test a policy's class or a system's name: a new system
that declares what it needs runs in every driver the day it is registered.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    """Flags a driver acts on. The defaults describe a plain per-sample cache."""

    #: holds bytes in a cache at all (False: every access reads storage; no cache is opened)
    caches: bool = True
    #: a real cache within the budget can carry these decisions out (False: a bound,
    #: such as the oracle that holds everything without charging the budget)
    realizable: bool = True
    #: decisions need the whole access sequence up front (an offline bound: Belady)
    needs_future: bool = False
    #: may serve another cached id in place of a requested one
    substitutes: bool = False
    #: reads chunks of the dataset's layout, whole or in part (``Decision.group``: some
    #: members' byte ranges), one storage request each (``hotset data pack``; the layout
    #: must exist). Packages a policy builds itself are ``packs``.
    reads_units: bool = False
    #: asks for read units ahead of the batches that need them
    prefetches: bool = False
    #: splits its cache into several regions with budgets of their own
    regions: bool = False
    #: decisions depend on training feedback (a scorer or loss weights)
    learns: bool = False
    #: plans with every rank's order of the epoch (``PlansWorld.begin_world``): each rank
    #: replays the others' accesses to hold the job's shared state (Brand §3.4)
    plans_world: bool = False
    #: builds read units at run time (packages) and loads them into its cache after a
    #: batch's accesses (``Backgrounds.background``; iCACHE's dynamic packaging)
    packs: bool = False
    #: asks, before each epoch's draw, for the losses of some samples from a forward
    #: pass (``Evaluates.to_evaluate``; ImPACT's re-evaluation of the set S)
    evaluates: bool = False
    #: reads read units (or single samples) into its cache after a batch's accesses,
    #: ahead of the requests they will serve (``Backgrounds.background`` loads of the
    #: dataset's own units; Quiver's double-buffered chunk loading, FAST'20 §5.1)
    loads: bool = False
    #: evicts groups of ids (its chunks) in concert with the other jobs of a shared
    #: cache (``GroupsEvictions.eviction_groups``): in a namespace shared by jobs, each job then
    #: plans two thirds of it, so that jobs a chunk apart still fit (Quiver §5.1)
    evicts_in_concert: bool = False
    #: starts its chunk cycle at the chunk the other jobs of a shared cache load now
    #: (``JoinsCycle.awaits_join`` / ``join_cycle`` / ``cycle_step``; Quiver's Algorithm 1,
    #: ``getCurrentChunk``), so that jobs started apart still load each chunk together
    joins_cycle: bool = False

    @property
    def backgrounds(self) -> bool:
        """Whether a driver asks ``Backgrounds.background`` after each batch."""
        return self.packs or self.loads

    @property
    def uses_budget(self) -> bool:
        """Whether the cache size changes what happens (0 bytes is then an error)."""
        return self.caches and self.realizable

    @property
    def runs_in_loader(self) -> bool:
        """Whether a real loader can drive it (bounds only run in the simulator)."""
        return self.realizable and not self.needs_future

    def describe(self) -> str:
        """The set flags, comma-separated (for listings and error messages)."""
        names = [
            name
            for name in (
                "needs_future",
                "substitutes",
                "reads_units",
                "prefetches",
                "regions",
                "learns",
                "plans_world",
                "packs",
                "evaluates",
                "loads",
                "evicts_in_concert",
                "joins_cycle",
            )
            if getattr(self, name)
        ]
        if not self.caches:
            names.insert(0, "no_cache")
        if not self.realizable:
            names.insert(0, "bound")
        return ", ".join(names) or "plain cache"
