"""How long `mpiscope report` takes on a run, step by step: imports, tidy table, model fits,
figures, SVG rendering, the whole page. Usage: python bench/report/time_report.py RUN_DIR..."""
from __future__ import annotations

import sys
import time
from pathlib import Path

t0 = time.perf_counter()
import matplotlib.pyplot  # noqa: E402,F401
import pandas  # noqa: E402,F401
import scipy.stats  # noqa: E402,F401

from mpiscope.report import html, plots  # noqa: E402
from mpiscope.report.export import tidy  # noqa: E402
from mpiscope.store import Run  # noqa: E402


def main(dirs: list[str]) -> None:
    print(f"imports (pandas, matplotlib, scipy, mpiscope): {time.perf_counter() - t0:.2f} s")
    runs = [Run(Path(d)) for d in dirs]
    steps = []
    t = time.perf_counter()
    df = tidy(runs)
    steps.append(("tidy table", time.perf_counter() - t))
    t = time.perf_counter()
    models = plots.fit_models(df) if ((df["family"] == "p2p") & (df["size"] > 0)).any() else []
    steps.append((f"model fits ({len(models)} lines)", time.perf_counter() - t))
    t = time.perf_counter()
    figs = plots.all_plots(df, {r.id: r.records().records for r in runs}, models)
    steps.append((f"figures ({len(figs)})", time.perf_counter() - t))
    t = time.perf_counter()
    for f in figs:
        html._svg(f.figure)
    steps.append(("SVG rendering", time.perf_counter() - t))
    t = time.perf_counter()
    page = html.render(runs)
    steps.append((f"whole page again ({len(page) / 1e3:.0f} kB)", time.perf_counter() - t))
    for name, s in steps:
        print(f"{name}: {s:.2f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
