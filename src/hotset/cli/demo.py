"""``hotset demo``: the headline job on the embedded default, no server needed.

Every seed system, the no-cache loader and plain PyTorch read one data set
through the real loader over a named store preset (real sleeping); the
accelerator's step is a fixed wait; rows repeat interleaved so machine load
cancels in the ratios. It prints one table and one sentence, and writes
``--out``/demo-results.{json,png}.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from hotset.bench.demo_options import DEFAULT_STORE, DemoOptions
from hotset.cli.store_option import store_line
from hotset.cli.typed_options import options_from


def _cell(value: object, width: int, spec: str) -> str:
    """A right-aligned table cell; a missing value is a dash of the same width."""
    if value is None:
        return f"{'-':>{width}}"
    sign, spec = ("+", spec[1:]) if spec.startswith("+") else ("", spec)
    return format(value, f">{sign}{width}{spec}")


_COLUMNS = (
    ("system", "system", 9, "", "<"),
    ("vs torch", "vs_torch", 9, ".2f", ">"),
    ("min-max", None, 12, "", ">"),
    ("no-I/O", "vs_no_io", 8, ".2f", ">"),
    ("exact", "exact_hit_ratio", 7, ".2f", ">"),
    ("subst", "substitution_ratio", 7, ".2f", ">"),
    ("ahead", "fetched_ahead_ratio", 7, ".2f", ">"),
    ("MB/epoch", "mb_read_per_epoch", 10, ".1f", ">"),
    ("requests", "requests_per_epoch", 10, ".0f", ">"),
    ("coverage", "sim_distinct_share", 9, ".0%", ">"),
    ("acc pt", "sim_acc_delta_pt", 8, "+.1f", ">"),
)


def table_lines(rows: list[dict[str, object]]) -> list[str]:
    """The demo's table: aligned columns, a dash where a row has no such figure."""
    header = "".join(f"{h:{a}{w}}" for h, _, w, _, a in _COLUMNS)
    lines = [header, "-" * len(header)]
    for r in rows:
        cells = []
        for _h, key, width, spec, align in _COLUMNS:
            if key is None:
                text = f"{r['vs_torch_min']:.2f}-{r['vs_torch_max']:.2f}"
                cells.append(f"{text:>{width}}")
            elif align == "<":
                cells.append(f"{r[key]!s:<{width}}")
            else:
                cells.append(_cell(r.get(key), width, spec))
        lines.append("".join(cells))
    return lines


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-out"),
    show_default=True,
)
@click.option(
    "--store",
    "store_preset",
    default=DEFAULT_STORE,
    show_default=True,
    metavar="PRESET",
    help="The store preset every row reads through (`hotset stores`).",
)
@click.option(
    "--bandwidth-mb-s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Override the preset's link bandwidth.",
)
@click.option(
    "--latency-ms",
    type=click.FloatRange(min=0),
    default=None,
    help="Override the preset's latency per request.",
)
@options_from(DemoOptions)
def demo(
    out: Path,
    store_preset: str,
    bandwidth_mb_s: float | None,
    latency_ms: float | None,
    opts: DemoOptions,
) -> None:
    """Every seed system vs PyTorch's DataLoader on one store; a table and a verdict."""
    from hotset.bench.demo import run
    from hotset.bench.demo_plot import plot
    from hotset.storage.presets import resolve_store

    store = resolve_store(
        store_preset, latency_ms=latency_ms, bandwidth_mb_s=bandwidth_mb_s, max_concurrency=None
    )
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    result = run(opts, out=out, store=store, log=lambda msg: click.echo(msg, err=True))
    result["wall_seconds"] = round(time.perf_counter() - started, 1)
    path = out / "demo-results.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    figure = plot(result, out / "demo-results.png")
    p = result["params"]
    click.echo("")
    click.echo(
        f"hotset demo: {p['n']} {opts.workload} samples ({p['mean_sample_bytes'] / 1e3:.0f} kB "
        f"mean), cache {opts.cache_frac:.0%} in shared memory, {opts.workers} workers, a "
        f"{opts.step_ms:g} ms accelerator step per batch, {opts.epochs} epochs per row, "
        f"{opts.repeats} repeats interleaved."
    )
    click.echo(store_line(store) + " (real sleeping)")
    for line in table_lines(result["table"]):
        click.echo(line)
    click.echo(
        "\nvs torch: samples/s over a torch.utils.data.DataLoader tuned to keep the store's "
        "requests in flight (a thread pool per worker), measured in the same repeat (median, "
        "min-max); exact: requests served from bytes the cache kept since an earlier use; "
        "subst: another cached sample served instead; ahead: the first use of bytes read "
        "before they were asked for (never merged); MB/epoch and requests: what the store "
        "moved, all of it read from storage whatever served it; coverage and acc pt: the live "
        "simulator's distinct samples per epoch and accuracy vs pytorch (simulated training); "
        "pytorch = hotset's loader without a cache."
    )
    click.echo("\n" + result["verdict"])
    click.echo(f"\nwrote {path} and {figure} in {result['wall_seconds']:.0f} s")
