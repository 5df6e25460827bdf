"""``hotset demo``: the headline job on the embedded default, no server needed.

It makes a small synthetic dataset (or reuses one it made before), trains the
same small model under several systems with a modeled remote store, and prints
one table. Everything it measures lands in ``--out`` as JSON.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from hotset.errors import HotsetError

DEFAULT_SYSTEMS = "pytorch,lru,minio,shade"


def _dataset(out: Path, n: int, seed: int) -> Path:
    from hotset.data import Manifest
    from hotset.data.synth import SynthConfig, make_synth

    data_dir = out / f"synth-{n}-s{seed}"
    if data_dir.is_dir():
        try:
            if len(Manifest.load(data_dir)) == n:
                click.echo(f"reusing dataset {data_dir}", err=True)
                return data_dir
        except HotsetError:
            pass
    click.echo(f"generating {n} synthetic 32x32 samples into {data_dir}", err=True)
    make_synth(data_dir, SynthConfig(n=n, seed=seed), force=True, progress=True)
    return data_dir


def _row(result: dict[str, Any]) -> dict[str, Any]:
    totals = result["totals"]
    epochs = result["epochs"]
    return {
        "system": result["system"],
        "exact_hit_ratio": totals["exact_hit_ratio_after_first"],
        "substitution_ratio": sum(e["substitutions"] for e in epochs[1:])
        / max(1, sum(e["requests"] for e in epochs[1:])),
        "storage_reads_per_epoch": totals["storage_reads"] / len(epochs),
        "modeled_io_s_per_epoch": totals["modeled_io_seconds"] / len(epochs),
        "final_val_accuracy": totals["final_val_accuracy"],
    }


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-out"),
    show_default=True,
)
@click.option("--n", "n", type=int, default=4000, show_default=True, help="Synthetic samples.")
@click.option("--epochs", type=int, default=6, show_default=True)
@click.option("--cache-frac", type=float, default=0.2, show_default=True)
@click.option("--systems", default=DEFAULT_SYSTEMS, show_default=True, help="Comma list.")
@click.option("--seed", type=int, default=0, show_default=True)
def demo(out: Path, n: int, epochs: int, cache_frac: float, systems: str, seed: int) -> None:
    """Train one small model under several systems and compare what storage saw."""
    if n < 100:
        raise HotsetError(f"--n must be at least 100, got {n}")
    from hotset.sim.live import run_live

    names = [s.strip() for s in systems.split(",") if s.strip()]
    out.mkdir(parents=True, exist_ok=True)
    data_dir = _dataset(out, n, seed)
    rows = []
    results = []
    for name in names:
        start = time.perf_counter()
        click.echo(f"training with {name} ...", err=True)
        result = run_live(
            system=name,
            dataset=str(data_dir),
            cache_frac=cache_frac,
            epochs=epochs,
            seed=seed,
            progress=True,
        )
        results.append(result)
        rows.append(_row(result) | {"wall_s": time.perf_counter() - start})
    path = out / "demo-results.json"
    path.write_text(json.dumps({"rows": rows, "runs": results}, indent=1) + "\n")
    click.echo("")
    click.echo(
        f"hotset demo: {n} synthetic samples, {epochs} epochs, cache {cache_frac:.0%} of the "
        "training bytes, store modeled at 2 ms/request, 4 in flight (virtual clock)."
    )
    click.echo("exact hits and substitutions are counted over epochs 2..E; they are never merged.")
    header = f"{'system':<10}{'exact-hit':>10}{'subst':>8}{'reads/epoch':>13}{'I/O s/epoch':>13}{'val acc':>9}"
    click.echo(header)
    click.echo("-" * len(header))
    for r in rows:
        click.echo(
            f"{r['system']:<10}{r['exact_hit_ratio']:>10.3f}{r['substitution_ratio']:>8.3f}"
            f"{r['storage_reads_per_epoch']:>13.0f}{r['modeled_io_s_per_epoch']:>13.2f}"
            f"{r['final_val_accuracy']:>9.3f}"
        )
    click.echo(f"\nwrote {path}")
