"""The terminal table ``hotset bench <suite>`` prints: a few columns per suite, aligned.

A suite's result rows hold 5 to 23 keys, some of them paragraphs (``detail``) or
whole dicts (``policy``); printed as ``key=value`` lines they ran to 900
characters. The table shows the handful that answer the suite's question under
short headers, cuts wide text (``detail``, a fault scenario's own counters), and leaves the rest to
``--json`` and to the result file (``benchmarks/results/<name>.json``, whose
every column ``benchmarks/README.md`` shows). docs/benchmarks.md lists the
headers with the JSON keys they stand for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: the widest a text cell of a wide column (``detail``, ``other``) may be: cut at its end
WIDE_CELL = 56
#: the widest any other text cell may be (a system with many options): cut in the
#: middle, so both the name and the last option stay readable
TEXT_CELL = 44
#: a header -> the JSON key it shows; one tuple per column, in table order
Column = tuple[str, str]

_SPEED = [("samples/s", "samples_per_s")]
_FAULTS_SHOWN = ("scenario", "runs", "failed_runs", "samples_lost", "wrong_samples", "detail")

SUITE_COLUMNS: dict[str, list[Column]] = {
    "sim": [
        ("policy", "policy"),
        ("accesses", "accesses"),
        ("seconds", "seconds"),
        ("accesses/s", "accesses_per_s"),
        ("hit_ratio", "hit_ratio"),
    ],
    "store": [
        ("case", "case"),
        ("clock", "clock"),
        ("seconds", "seconds"),
        *_SPEED,
        ("reads", "reads"),
        ("vs_chunk", "vs_chunk"),
    ],
    "loader": [
        ("ms", "latency_ms"),
        ("name", "name"),
        *_SPEED,
        ("stall", "stall_share"),
        ("exact", "exact_hit_ratio"),
        ("subst", "substitution_ratio"),
        ("ahead", "fetched_ahead_ratio"),
        ("requests", "storage_requests"),
        ("req/ep", "requests_per_epoch"),
        ("server_req/ep", "server_requests_per_epoch"),
        ("MB/ep", "mb_per_epoch"),
        ("server_MB/ep", "server_mb_per_epoch"),
        ("in_flight", "requests_in_flight"),
        ("distinct/ep", "unique_ids_trained_per_epoch"),
        ("vs_torch", "vs_torch"),
        ("vs_no_io", "vs_no_io"),
    ],
    "matrix": [
        ("store", "preset"),
        ("workload", "workload"),
        ("cache", "cache_frac"),
        ("system", "system"),
        ("vs_torch", "vs_torch"),
        ("min", "vs_torch_min"),
        ("max", "vs_torch_max"),
        ("vs_no_io", "vs_no_io"),
        ("MB/ep", "mb_read_per_epoch"),
        ("read/deliv", "read_per_delivered"),
        ("exact", "exact_hit_ratio"),
        ("subst", "substitution_ratio"),
        ("ahead", "fetched_ahead_ratio"),
        ("coverage", "sim_distinct_share"),
        ("acc_pt", "sim_acc_delta_pt"),
        ("tta_s", "modeled_tta_s"),
    ],
    "hitratio": [
        ("workload", "workload"),
        ("system", "system"),
        ("cache", "cache_frac"),
        ("exact", "exact_hit_ratio"),
        ("bound", "exact_hit_bound"),
        ("subst", "substitution_ratio"),
        ("ahead", "fetched_ahead_ratio"),
        ("coverage", "coverage_after_first"),
        ("exact_run", "exact_hit_ratio_all"),
        ("belady_run", "belady_hit_ratio_all"),
        ("requests/ep", "storage_requests_per_epoch_after_first"),
        ("distinct/ep", "unique_ids_trained_after_first"),
        ("epoch_s", "modeled_epoch_seconds_after_first"),
    ],
    "train": [
        ("workload", "workload"),
        ("system", "system"),
        ("acc", "final_acc_mean"),
        ("acc_std", "final_acc_std"),
        ("acc_delta", "acc_delta_vs_pytorch"),
        ("to_target_s", "time_to_target_mean_s"),
        ("reached", "reached"),
        ("requests/ep", "storage_requests_per_epoch_mean"),
        ("exact", "exact_hit_ratio_mean"),
        ("distinct/ep", "unique_ids_trained_per_epoch_mean"),
        ("epoch_corr", "epoch_order_spearman_mean"),
    ],
    "traingrid": [
        ("cache", "cache_frac"),
        ("chunk", "chunk_size"),
        ("system", "system"),
        ("epoch_s", "epoch_s"),
        ("to_target_s", "time_to_target_s"),
        ("reached", "reached"),
        ("to_full_s", "time_to_full_target_s"),
        ("acc", "final_acc"),
        ("requests/ep", "requests_per_epoch"),
        ("read/trained", "bytes_read_over_trained"),
        ("distinct/ep", "unique_ids_trained_per_epoch"),
        ("epoch_vs_ref", "epoch_vs_ref"),
        ("ttt_vs_ref", "ttt_vs_ref"),
        ("ttt_diff_s", "ttt_diff_s_mean"),
        ("diff_low", "ttt_diff_s_low"),
        ("diff_high", "ttt_diff_s_high"),
        ("meets", "meets"),
        ("reading", "ttt_reading"),
    ],
    "overhead": [
        ("metric", "metric"),
        ("value", "value"),
        ("unit", "unit"),
        ("detail", "detail"),
    ],
    "faults": [
        ("scenario", "scenario"),
        ("runs", "runs"),
        ("failed", "failed_runs"),
        ("lost", "samples_lost"),
        ("wrong", "wrong_samples"),
        ("counters", "other"),
    ],
    "brand": [
        ("part", "part"),
        ("ms", "latency_ms"),
        ("cache", "cache_frac"),
        ("chunk", "chunk_size"),
        ("name", "name"),
        *_SPEED,
        ("exact", "exact_hit_ratio"),
        ("subst", "substitution_ratio"),
        ("wasted", "wasted_read_share"),
        ("vs_torch", "vs_torch"),
    ],
    "nodes": [
        ("workload", "workload"),
        ("system", "system"),
        ("nodes", "nodes"),
        ("scope", "scope"),
        ("cache", "cache_frac_per_node"),
        ("exact", "exact_hit_ratio"),
        ("remote", "remote_hit_share"),
        ("requests/ep", "storage_requests_per_epoch"),
        ("distinct/ep", "unique_ids_trained_per_epoch"),
        ("epoch_s", "modeled_epoch_seconds"),
    ],
    "ranks": [
        ("world", "world"),
        ("scope", "scope"),
        ("system", "system"),
        ("cache", "cache_frac_per_rank"),
        ("exact", "exact_hit_ratio"),
        ("pool", "pool_hit_ratio"),
        ("requests/ep", "storage_requests_per_epoch"),
        ("distinct/ep", "unique_ids_trained_per_epoch"),
        *_SPEED,
    ],
    "multijob": [
        ("system", "system"),
        ("arrangement", "arrangement"),
        ("cache", "cache_frac"),
        ("start", "start"),
        ("reads/item/ep", "reads_per_item_per_epoch"),
        ("exact", "exact_hit_ratio"),
        ("subst", "substitution_ratio"),
        ("pool_hits/ep", "pool_hits_per_epoch"),
        ("distinct/job/ep", "ids_trained_per_job_epoch"),
        ("every_id", "every_id_every_epoch"),
        *_SPEED,
    ],
    "placement": [
        ("loop", "loop"),
        ("job", "job"),
        ("step_ms", "step_ms"),
        ("benefit", "benefit"),
        ("caching", "caching"),
        ("placement", "placement"),
        ("epoch_s", "epoch_s"),
        ("reads/ep", "storage_requests_per_epoch"),
        ("refused/ep", "refused_puts_per_epoch"),
        ("cached", "cached_share_end"),
        ("of_ns", "namespace_share_end"),
        ("every_id", "every_id_every_epoch"),
        *_SPEED,
    ],
    "locality": [
        ("layout", "layout"),
        ("chunk", "chunk_size"),
        ("cache", "cache_frac"),
        ("system", "system"),
        ("adjacency", "same_chunk_adjacency"),
        ("adj/unif", "adjacency_vs_uniform"),
        ("spread", "chunk_spread"),
        ("spread/unif", "spread_vs_uniform"),
        ("epoch_rho", "epoch_rank_corr"),
        ("rho_z", "epoch_rank_corr_z"),
        ("label_adj/unif", "label_adjacency_vs_uniform"),
    ],
    "icachejobs": [
        ("cache", "cache_frac"),
        ("scheme", "scheme"),
        ("job", "job"),
        ("epoch_s", "epoch_seconds"),
        ("vs_default", "vs_default"),
        ("hit", "hit_ratio"),
        ("hit_cached", "hit_ratio_cached_batches"),
        ("coverage", "coverage"),
        ("MB/ep", "mb_read_per_epoch"),
        ("benefit", "benefit_last"),
    ],
    "pipeline": [
        ("name", "name"),
        *_SPEED,
        ("vs_model", "vs_model_only"),
        ("vs_no_io", "vs_no_io"),
        ("stall", "stall_share"),
        ("cpu_main", "cpu_s_per_sample_main"),
        ("cpu_workers", "cpu_s_per_sample_workers"),
        ("requests/ep", "storage_requests_per_epoch"),
        ("MB/ep", "storage_mb_per_epoch"),
        ("exact", "exact_hit_ratio"),
        ("subst", "substitution_ratio"),
        ("every_id", "every_id_every_epoch"),
    ],
}
#: columns whose text is cut to WIDE_CELL characters
WIDE_KEYS = frozenset({"detail", "other"})


def format_cell(value: Any) -> str:
    """A number to four significant digits (whole from 1000 up, never in e-notation
    there), None as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, (dict, list, tuple)):
        return f"<{len(value)} items>"
    return str(value)


def _cut_end(text: str, width: int = WIDE_CELL) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _cut_middle(text: str, width: int = TEXT_CELL) -> str:
    if len(text) <= width:
        return text
    head = (width - 3) // 2
    return text[:head] + "..." + text[len(text) - (width - 3 - head) :]


def _faults_other(row: Mapping[str, Any]) -> str:
    """A fault scenario's own counters (each scenario has different ones) as k=v."""
    return " ".join(
        f"{k}={format_cell(v)}" for k, v in row.items() if k not in _FAULTS_SHOWN and v is not None
    )


def _generic_columns(rows: Sequence[Mapping[str, Any]]) -> list[Column]:
    """For a suite without a column list: every scalar key, in first-seen order."""
    keys = dict.fromkeys(k for row in rows for k in row)
    scalar = [k for k in keys if not any(isinstance(r.get(k), (dict, list)) for r in rows)]
    return [(k, k) for k in scalar]


def table_lines(suite: str | None, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The aligned table of ``rows``: the suite's columns (those no row has are left
    out), numbers right-aligned, text left-aligned, wide text cut."""
    if not rows:
        return []
    if suite == "faults":
        rows = [{**row, "other": _faults_other(row)} for row in rows]
    columns = SUITE_COLUMNS.get(suite or "") or _generic_columns(rows)
    columns = [(h, k) for h, k in columns if any(k in row for row in rows)]
    cells = [[_cell_text(row, k) for _h, k in columns] for row in rows]
    numeric = [
        all(isinstance(row.get(k), (int, float)) or row.get(k) is None for row in rows)
        for _h, k in columns
    ]
    widths = [max(len(h), *(len(line[i]) for line in cells)) for i, (h, _k) in enumerate(columns)]
    out = [_join([h for h, _k in columns], widths, numeric)]
    out += [_join(line, widths, numeric) for line in cells]
    return out


def _cell_text(row: Mapping[str, Any], key: str) -> str:
    text = format_cell(row[key]) if key in row else ""
    return _cut_end(text) if key in WIDE_KEYS else _cut_middle(text)


def _join(cells: Sequence[str], widths: Sequence[int], numeric: Sequence[bool]) -> str:
    parts = [
        c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)
    ]
    return "  ".join(parts).rstrip()
