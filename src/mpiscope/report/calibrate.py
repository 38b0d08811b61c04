"""The words of `mpiscope calibrate`: the twin's fitted figures, the validation table (measured
against simulated, point by point) with why a point is outside its target, and its summary."""
from __future__ import annotations

from typing import TYPE_CHECKING

from mpiscope.report.predictions import aligned
from mpiscope.report.twin import provenance_lines
from mpiscope.util.units import human_size

if TYPE_CHECKING:
    import pandas as pd

    from mpiscope.analysis.calibrate.platform import Twin
    from mpiscope.analysis.calibrate.validation import Reason


def render_twin(twin: "Twin") -> str:
    lines = [f"twin of {', '.join(twin.runs)} ({twin.library}): {twin.nodes} nodes, {twin.description}",
             *(f"  {line}" for line in provenance_lines(twin)[2:])]
    return "\n".join(lines)


# Why a point is outside its target, by the kind of its reason (analysis/calibrate/validation.py's
# `Reason`, whose figures fill the blanks).
WHY = {
    "disturbed": "the measurement was disturbed: {cause}",
    "oversubscribed": "the measurement was disturbed: more ranks than cores: the times measure the scheduler",
    "spread": "the measurement itself spans +-{spread:.0%}",
    "switch": "at the switch between {between[0]} and {between[1]} B: SMPI changes its factors at one size",
    "breakpoint": "beside SMPI's factor breakpoint between {between[0]} and {between[1]} B: its factors change at "
                  "one size",
    "regime": "the regime's line misses this size",
    "in_flight": "messages in flight together: SMPI shares the link, the library pipelines them",
    "algorithm": "SimGrid's {selector} algorithm of {benchmark}, not the library's own code",
}


def why(reason: "Reason | None", benchmark: str) -> str:
    """Why a point of `benchmark` is outside its target, in words ("" inside it: no reason)."""
    kind = getattr(reason, "kind", None)
    return WHY[kind].format(**vars(reason), benchmark=benchmark) if kind else ""


def render_table(table: "pd.DataFrame") -> str:
    """Measured against simulated, a line per point; `!` marks a point outside its target."""
    head = ["benchmark", "ranks", "size", "role", "measured us", "simulated us", "error", "target", "why"]
    rows = [head]
    for r in table.itertuples(index=False):
        half = f" +-{r.measured_half_width:.0%}" if r.measured_half_width == r.measured_half_width else ""
        rows.append([r.benchmark, str(r.ranks), human_size(int(r.size)), r.role, f"{r.measured_us:.4g}{half}",
                     f"{r.simulated_us:.4g}", f"{r.error:+.1%}{' !' if r.outside else '  '}",
                     f"{r.target:.0%}", why(r.reason, r.benchmark)])
    return ("validation: measured against simulated on the twin (error = simulated / measured - 1)\n"
            + aligned(rows, {0, 3, 8}))


def summary_text(table: "pd.DataFrame") -> str:
    from mpiscope.analysis.calibrate.validation import summaries
    lines = []
    for name, s in summaries(table).items():
        lines.append(f"{name}: {s.points} points, median |error| {s.median:.1%}, worst {s.worst:+.1%} "
                     f"({s.worst_benchmark} {s.worst_size} B at {s.worst_ranks} ranks), {s.outside} outside target")
    return "\n".join(lines)


def validation_rows(table: "pd.DataFrame") -> list[dict]:
    """The validation table as a twin's record keeps it (plain JSON values, null for NaN), each
    point's reason in words (`why`)."""
    import json
    said = [why(r, b) for r, b in zip(table["reason"], table["benchmark"])]
    return json.loads(table.drop(columns="reason").assign(why=said).to_json(orient="records"))


def twins_of(contexts) -> list[tuple[str, dict]]:
    """The calibrated twins runs were simulated on, with their records: each platform file that
    still holds the twin the run saw (the same content digest) and keeps its validation."""
    from pathlib import Path

    from mpiscope.analysis.calibrate.platform import read_twin
    from mpiscope.launchers.smpirun import platform_digest
    from mpiscope.util.errors import UsageError
    out: dict[str, dict] = {}
    for ctx in contexts:
        sim = getattr(ctx, "simulation", None) or {}
        path = Path(str(sim.get("platform") or ""))
        if path.suffix != ".xml" or str(path) in out or not path.is_file():
            continue
        try:
            same = platform_digest(path) == sim.get("digest")
        except UsageError:
            continue
        record = read_twin(path) if same else None
        if record and record.get("validation"):
            out[str(path)] = record
    return list(out.items())


def html_section(twins: "list[tuple[str, dict]]", table_html) -> str:
    """Each twin's validation as the HTML report shows it: what it was calibrated from, the summary
    per role, and measured against simulated point by point (`table_html(head, rows, cls)` makes
    the table; a point outside its target is marked)."""
    import pandas as pd
    from html import escape
    out = []
    for path, record in twins:
        table = pd.DataFrame(record["validation"])
        rows = []
        for r in table.itertuples(index=False):
            half = r.measured_half_width
            cells = [r.benchmark, str(r.ranks), human_size(int(r.size)), r.role,
                     f"{r.measured_us:.4g}" + (f" ±{half:.0%}" if half is not None and half == half else ""),
                     f"{r.simulated_us:.4g}", f"{r.error:+.1%}", f"{r.target:.0%}", r.why or ""]
            rows.append([escape(c) if k != 6 or not r.outside else f"<strong>{escape(c)} !</strong>"
                         for k, c in enumerate(cells)])
        out.append(f"<h3>{escape(path)}</h3><p>A twin calibrated by mpiscope {escape(str(record.get('version')))} "
                   f"from runs {escape(', '.join(record.get('runs', [])))} ({escape(str(record.get('library')))}): "
                   f"{escape(str(record.get('description')))}. Measured against simulated on the twin, error = "
                   f"simulated / measured - 1; ! marks a point outside its target.</p>"
                   f"<ul>{''.join(f'<li>{escape(line)}</li>' for line in summary_text(table).splitlines())}</ul>"
                   + table_html(["benchmark", "ranks", "size", "role", "measured µs", "simulated µs", "error",
                                 "target", "why"], rows, "comparison"))
    return "".join(out)
