"""The words of `mpiscope calibrate`: the twin's fitted figures, the validation table (measured
against simulated, point by point) and its summary."""
from __future__ import annotations

from typing import TYPE_CHECKING

from mpiscope.report.predictions import aligned
from mpiscope.util.units import human_size

if TYPE_CHECKING:
    import pandas as pd

    from mpiscope.analysis.calibrate.platform import Twin


def render_twin(twin: "Twin") -> str:
    lines = [f"twin of {', '.join(twin.runs)} ({twin.library}): {twin.nodes} nodes, {twin.description}",
             *(f"  {line}" for line in twin.provenance_lines()[2:])]
    return "\n".join(lines)


def render_table(table: "pd.DataFrame") -> str:
    """Measured against simulated, a line per point; `!` marks a point outside its target."""
    head = ["benchmark", "ranks", "size", "role", "measured us", "simulated us", "error", "target", "why"]
    rows = [head]
    for r in table.itertuples(index=False):
        half = f" +-{r.measured_half_width:.0%}" if r.measured_half_width == r.measured_half_width else ""
        rows.append([r.benchmark, str(r.ranks), human_size(int(r.size)), r.role, f"{r.measured_us:.4g}{half}",
                     f"{r.simulated_us:.4g}", f"{r.error:+.1%}{' !' if r.outside else '  '}",
                     f"{r.target:.0%}", r.why])
    return ("validation: measured against simulated on the twin (error = simulated / measured - 1)\n"
            + aligned(rows, {0, 3, 8}))


def summary_text(table: "pd.DataFrame") -> str:
    from mpiscope.analysis.calibrate.validation import summaries
    lines = []
    for name, s in summaries(table).items():
        lines.append(f"{name}: {s.points} points, median |error| {s.median:.1%}, worst {s.worst:+.1%} "
                     f"({s.worst_at}), {s.outside} outside target")
    return "\n".join(lines)
