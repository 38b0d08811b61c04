"""How long `mpiscope report` takes on a run, step by step: imports, tidy table, model fits,
figures, SVG rendering, the whole page. Usage: python bench/report/time_report.py RUN_DIR..."""
from __future__ import annotations

import sys
import time
from pathlib import Path

t0, c0 = time.perf_counter(), time.process_time()
import matplotlib.pyplot  # noqa: E402,F401
import pandas  # noqa: E402,F401
import scipy.stats  # noqa: E402,F401

from mpiscope.report import html, plots  # noqa: E402
from mpiscope.results.table import tidy  # noqa: E402
from mpiscope.store.runs import Run  # noqa: E402


def main(dirs: list[str]) -> None:
    print(f"imports (pandas, matplotlib, scipy, mpiscope): {time.perf_counter() - t0:.2f} s wall, "
          f"{time.process_time() - c0:.2f} s CPU")
    runs = [Run(Path(d)) for d in dirs]
    steps = []
    c = time.process_time()
    t, c = time.perf_counter(), time.process_time()
    df = tidy(runs)
    steps.append(("tidy table", time.perf_counter() - t, time.process_time() - c))
    t, c = time.perf_counter(), time.process_time()
    models = plots.fit_models(df) if ((df["family"] == "p2p") & (df["size"] > 0)).any() else []
    steps.append((f"model fits ({len(models)} lines)", time.perf_counter() - t, time.process_time() - c))
    t, c = time.perf_counter(), time.process_time()
    figs = plots.all_plots(df, models)
    steps.append((f"figures ({len(figs)})", time.perf_counter() - t, time.process_time() - c))
    t, c = time.perf_counter(), time.process_time()
    for f in figs:
        html._svg(f.figure)
    steps.append(("SVG rendering", time.perf_counter() - t, time.process_time() - c))
    t, c = time.perf_counter(), time.process_time()
    page = html.render(runs)
    steps.append((f"whole page again ({len(page) / 1e3:.0f} kB)", time.perf_counter() - t, time.process_time() - c))
    for name, wall, cpu in steps:
        print(f"{name}: {wall:.2f} s wall, {cpu:.2f} s CPU")


if __name__ == "__main__":
    main(sys.argv[1:])
