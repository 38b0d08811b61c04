"""`mpiscope table RUN...|SWEEP_DIR`: configurations side by side, one row per message size."""
from __future__ import annotations

import argparse
import sys

from mpiscope.util import paths
from mpiscope.commands.options import one_size


def cmd_table(a: argparse.Namespace) -> int:
    from mpiscope.util.console import out
    from mpiscope.report.reporter import report
    from mpiscope.report.table import (SideBySideTables, measured, render_csv, render_markdown,
                                       render_terminal, with_config)
    from mpiscope.results.view import results_of
    from mpiscope.util.console import records_of
    from mpiscope.store.runs import runs_of
    runs = runs_of(a.runs, paths.runs_dir(a.runs_dir))
    records_of(runs)  # warns about damaged lines it leaves out
    latency_upto = one_size(a.latency_upto, "--latency-upto")
    results = results_of(runs)
    if a.variation:
        from mpiscope.analysis.variation import variation
        from mpiscope.report.variation import variation_table
        out.print(variation_table(variation(with_config(measured(results)), a.benchmark)))
        return 0
    tables = report(results, SideBySideTables(a.benchmark, a.words, latency_upto, a.per_launch))
    if a.format == "csv":
        sys.stdout.write(render_csv(tables))
    elif a.format == "markdown":
        sys.stdout.write("\n".join(render_markdown(t) for t in tables))
    else:
        for t in tables:
            out.print(render_terminal(t))
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    from mpiscope.report.numbers import LATENCY_UPTO, TABLE_FORMATS
    p = sub.add_parser("table", parents=[runs_dir],
                       help="runs or a sweep side by side: sizes x configurations, MB/s (latency us)")
    p.add_argument("runs", nargs="+", metavar="RUN|SWEEP_DIR",
                   help="run ids, prefixes, paths, 'latest', or a sweep directory")
    p.add_argument("--words", action="store_true", help="sizes in 8-byte words (the ring study's unit) instead of bytes")
    p.add_argument("--format", choices=TABLE_FORMATS, default="terminal")
    p.add_argument("--benchmark", help="only this benchmark (default: one table per benchmark)")
    p.add_argument("--latency-upto", default=LATENCY_UPTO, metavar="SIZE",
                   help=f"show the latency beside MB/s up to this size (default {LATENCY_UPTO})")
    p.add_argument("--per-launch", action="store_true",
                   help="a column per configuration and launch (default: one per configuration, its "
                        "launch-level estimate)")
    p.add_argument("--variation", action="store_true",
                   help="within- and between-launch variation per configuration, benchmark and size")
    p.set_defaults(func=cmd_table)
