"""The sweep's closing launch-to-launch variation table: one row per configuration and
benchmark, configurations in the sweep's order, benchmarks sorted within each (rank counts
as numbers)."""
from __future__ import annotations

import pandas as pd
from rich.console import Console

from mpiscope.report.variation import summary_table


def rows(table) -> list[tuple[str, str]]:
    console = Console(record=True, width=200)
    console.print(table)
    lines = [line.strip("│┃ ") for line in console.export_text().splitlines()]
    cells = [[c.strip() for c in line.split("│")] for line in lines if line.count("│") >= 6]
    return [(c[0], c[1]) for c in cells]


def test_summary_rows_follow_the_sweep_and_sort_the_benchmarks():
    order = [("b=2", "pingpong"), ("b=2", "allreduce (16 ranks)"), ("a=1", "bw"),
             ("b=2", "allreduce (4 ranks)"), ("a=1", "allreduce (4 ranks)"), ("b=2", "bcast (4 ranks)")]
    v = pd.DataFrame([{"config": c, "benchmark": b, "size": s, "launches": 3, "within_ci_rel": 0.01,
                       "between_cv": 0.02 * s, "p": 0.5} for c, b in order for s in (8, 64)])
    assert rows(summary_table(v)) == [
        ("b=2", "allreduce (4 ranks)"), ("b=2", "allreduce (16 ranks)"), ("b=2", "bcast (4 ranks)"),
        ("b=2", "pingpong"), ("a=1", "allreduce (4 ranks)"), ("a=1", "bw")]
