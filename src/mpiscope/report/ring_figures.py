"""The ring case study's figure files: the bandwidth curves are report.plots' ring plots, the
deadlock table (report.deadlocks) is drawn here."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from mpiscope.records import Record
from mpiscope.report.axes import plt, save
from mpiscope.report.deadlocks import deadlock_table
from mpiscope.report.plots import ring_nblock_plot, ring_size_plot
from mpiscope.results.view import Results


def deadlock_figure(records: Iterable[Record]) -> plt.Figure:
    """The deadlock table as a picture, for reports that only take figures."""
    table = deadlock_table(records)
    cols = [c for c in ("series", "result") if c in table]
    fig, ax = plt.subplots(figsize=(7, 0.35 * (len(table) + 2)))
    ax.axis("off")
    if not table.empty:
        t = ax.table(cellText=table[cols].values.tolist(), colLabels=cols, loc="center", cellLoc="left")
        t.auto_set_column_width(list(range(len(cols))))
    ax.set_title("where each algorithm deadlocked")
    return fig


def write_all(results: Results, directory: Path) -> list[Path]:
    """Every figure of the study's run (its results) into `directory` (the curves are the
    report's own plots); the paths written."""
    df = results.frame
    (run,) = results.runs
    out = []
    for name, draw in (("ring-bandwidth-vs-size.png", lambda: ring_size_plot(df)),
                       ("ring-bandwidth-vs-nblock.png", lambda: ring_nblock_plot(df)),
                       ("ring-deadlocks.png", lambda: deadlock_figure(run.records()))):
        try:
            fig = draw()
        except ValueError:  # that series was not measured (e.g. no nblock sweep)
            continue
        path = Path(directory) / name
        save(fig, path)
        out.append(path)
    return out
