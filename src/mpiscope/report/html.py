"""`mpiscope report`: one self-contained HTML file (inline CSS, plots as inline SVG images, no
scripts, system fonts) with the summary, models, plots, tables, provenance and warnings of runs.
Every figure is launch-level (results.frame): a point's estimate and 95 % interval over its
launches, each launch a dot in the plots, the levels launches fell into in the tables."""
from __future__ import annotations

import base64
import io
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from html import escape
from itertools import groupby
from pathlib import Path

import pandas as pd

from mpiscope import __version__
from mpiscope.analysis.cache import copy_rate_flags
from mpiscope.analysis.hockney import Issue
from mpiscope.report.copyrate import MARK, MARK_NOTE
from mpiscope.report.modes import modes_text
from mpiscope.report.hockney import issue_text, why
from mpiscope.records import Context, RecordFile
from mpiscope.report.axes import plt
from mpiscope.report.configs import legend_keys, series, with_mpi
from mpiscope.report.numbers import num, pct
from mpiscope.report.plots import Plot, Plots, SeriesModel, fit_models
from mpiscope.report.reporter import report
from mpiscope.results.view import Results
from mpiscope.report.warnings import run_warnings
from mpiscope.report.doctor import section as doctor_section
from mpiscope.util.output import write_output
from mpiscope.util.units import human_size
from mpiscope.store.runs import Run

CSS = (Path(__file__).with_name("report.css")).read_text()
OPTIONAL = ("calibration", "comparison", "history")  # sections shown only when they have something to show


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    """Cells are HTML already; header cells are escaped here."""
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def _svg(fig) -> str:
    buf = io.BytesIO()
    # a tight bounding box costs a second draw: only for a legend hung below the axes
    fig.savefig(buf, format="svg", bbox_inches="tight" if fig.legends else None)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


# --- sections -------------------------------------------------------------------------------

def _what(df: pd.DataFrame, runs: list[Run], contexts: dict[str, Context | None]) -> str:
    benches = ", ".join(dict.fromkeys(df["benchmark"])) if not df.empty else "nothing"
    sizes = df["size"] if not df.empty else pd.Series([0])
    libs = ", ".join(dict.fromkeys(with_mpi(df)["mpi"])) if not df.empty else "?"
    hosts = sorted({h for c in contexts.values() if c is not None for h in c.hosts})
    ranks = sorted({int(r) for r in df["ranks"].dropna()}) if "ranks" in df else []
    return (f"<p class=\"lede\">{len(runs)} run{'s' if len(runs) != 1 else ''} of <b>{escape(benches)}</b>, "
            f"message sizes {human_size(int(sizes.min()))} to {human_size(int(sizes.max()))}, with "
            f"<b>{escape(libs)}</b> on {', '.join(map(str, ranks)) or '?'} ranks, "
            f"host{'s' if len(hosts) != 1 else ''} {escape(', '.join(hosts) or '?')}.</p>")


def _imported(df: pd.DataFrame) -> str:
    """What the figures of imported runs are (mpiscope import, docs/import.md)."""
    if df.empty or "tool" not in df or df["tool"].isna().all():
        return ""
    rows = df[df["tool"].notna()]
    tools = sorted({f"{str(t).upper()} {v} {b}" for t, v, b in zip(rows["tool"], rows.get("tool_version", ""),
                                                                     rows.get("tool_benchmark", ""))})
    means = (rows.get("estimate", pd.Series(dtype=object)) == "mean").any()
    return (f'<p class="imported">{len(rows)} point{"s" if len(rows) != 1 else ""} were <b>imported</b> from '
            f'another tool\'s output ({escape(", ".join(tools))}): '
            + ("their figures are the tool\'s averages (means), not medians; " if means else "")
            + 'the tool gives no interval, so they have none and no test is made on them.</p>')


def _launches(df: pd.DataFrame) -> str:
    """How many launches the figures rest on, and what their intervals therefore say."""
    if df.empty or "launches" not in df:
        return ""
    if "tool" in df and df["tool"].notna().all():
        return _imported(df)
    lo, hi = int(df["launches"].min()), int(df["launches"].max())
    if hi <= 1:
        return _imported(df) + (
                '<p class="single-launch">Each point was measured in <b>one launch</b>: its 95&nbsp;% interval '
                'covers that launch only and says nothing about the next launch, whose median may sit '
                'elsewhere. Measure with several launches (<code>--launches 3</code>) for intervals that '
                'hold across launches.</p>')
    n = f"{lo}" if lo == hi else f"{lo} to {hi}"
    modes = sum(bool(modes_text(m)) for m in df["modes"] if isinstance(m, tuple)) if "modes" in df else 0
    return (f'<p class="launches">Each point was measured in <b>{n} launches</b>; every figure is the '
            f'launch-level estimate (the geometric mean of the launch medians) with its 95&nbsp;% interval over '
            f'launches, and the plots show each launch\'s median as a dot beside it.'
            + (f' In <b>{modes} point{"s" if modes != 1 else ""}</b> the launches fell into distinct levels '
               f'(see the tables).' if modes else "") + _drift(df) + '</p>')


def _drift(df: pd.DataFrame) -> str:
    """Whether the intervals also include the drift from run to run (docs/statistics.md)."""
    several = df[df["launches"] > 1]
    runs = several["drift_runs"].dropna() if "drift_runs" in several else pd.Series(dtype=float)
    if runs.empty:
        return (" The launches of a run follow each other within seconds and share the machine's state, so the "
                "next run may fall outside these intervals; from the third run of a configuration on, they "
                "include the drift from run to run learnt from the earlier runs.")
    span = f"{int(runs.min())}" if runs.min() == runs.max() else f"{int(runs.min())} to {int(runs.max())}"
    return (f' The intervals of <b>{len(runs)} of {len(several)} points</b> also include the drift from run to '
            f'run, learnt from {span} runs of the same configuration.')


def _cards(df: pd.DataFrame) -> str:
    """Headline figures per configuration: small-message latency and peak bandwidth."""
    p2p = df[(df["family"] == "p2p") & (df["size"] > 0)] if "family" in df else df.iloc[0:0]
    if p2p.empty:
        return ""
    p2p = with_mpi(p2p)
    cards = []
    for label, rows in series(p2p, legend_keys(p2p, exclude=["benchmark"], within=["benchmark", "size"])):
        lat_rows = rows[rows["benchmark"] == "pingpong"] if (rows["benchmark"] == "pingpong").any() else rows
        small = lat_rows[lat_rows["size"] == lat_rows["size"].min()].iloc[0]
        peak = rows.loc[rows["bw_median_MBps"].idxmax()]
        cards.append(
            f'<div class="card"><div class="card-title">{escape(label)}</div>'
            f'<div class="metric"><span class="value">{num(small.time_median_us)}</span> µs</div>'
            f'<div class="caption">{escape(small.benchmark)} latency at {human_size(int(small["size"]))}'
            + (f' ({escape(str(small.get("evidence")))})</div>' if small.get("evidence") else
               f' ({_interval(small)} {num(small.time_ci_low_us)}–{num(small.time_ci_high_us)})</div>'
               if small.get("stop_reason") != "imported" else " (imported: the tool's figure, no interval)</div>")
            + f'<div class="metric"><span class="value">{num(peak.bw_median_MBps, 4)}</span> MB/s</div>'
            f'<div class="caption">peak bandwidth: {escape(peak.benchmark)} at {human_size(int(peak["size"]))}</div>'
            f'</div>')
    return f'<div class="cards">{"".join(cards)}</div>'


def _interval(row) -> str:
    n = int(getattr(row, "launches", 1) or 1)
    return f"95% interval over {n} launches" if n > 1 else "95% CI"


def _warnings(results: Results, records: dict[str, RecordFile], many: bool) -> str:
    items = [(run.id, w) for run in results.runs
             for w in run_warnings(run, records[run.id], [e.point for e in results.points(run.id).values()],
                                   results.judged(run.id))]
    if not items:
        return '<p class="ok">No warnings: every point converged, no oversubscription, time-outs or skips.</p>'
    lis = "".join(f"<li>{f'<span class=run>{escape(rid)}</span> ' if many else ''}{escape(w)}</li>"
                  for rid, w in items)
    return f'<ul class="warnings">{lis}</ul>'


def _estimate(v: float, ci, scale: float = 1.0, issue: Issue | str | None = None) -> str:
    """A fitted figure and its interval, both times `scale`; "not identifiable" (the reason on
    hover) when the data do not determine it (`HockneyFit.latency_issue`, `per_byte_issue`)."""
    if issue:
        text = issue if isinstance(issue, str) else issue_text(issue)
        return f'<span class="ci" title="{escape(text or "")}">not identifiable</span>'
    return f'{num(v * scale, 4)} <span class="ci">[{num(ci[0] * scale, 4)}, {num(ci[1] * scale, 4)}]</span>'


def _models(models: list[SeriesModel]) -> str:
    if not models:
        return "<p>No point-to-point measurements to model.</p>"
    parts = []
    for m in models:
        title = f"<h3>{escape(m.label)}</h3>"
        if m.report is None:
            parts.append(f"{title}<p class=muted>{escape(m.problem or 'no model')}</p>")
            continue
        sw = "".join(
            f"<li>{'burst of a rate limiter (not a protocol switch)' if s.burst else 'switch'} at "
            f"~{human_size(int(round(s.size)))} (between measured sizes {s.bracket[0]} and "
            f"{s.bracket[1]} B): time jumps {s.jump * 100:+.1f}%, per-byte cost ×{num(s.slope_ratio)}</li>"
            for s in m.report.switches)
        head = ["", *(f"regime {i + 1}: {human_size(r.size_range[0])}–{human_size(r.size_range[1])}"
                      for i, r in enumerate(m.report.regimes))]
        fits = [r.fit for r in m.report.regimes]
        mb = 2 ** 20 / 1e6  # analysis reports 1/beta in MiB/s; the engine's MB/s are 10^6 bytes
        rows = [
            ["latency α (µs)", *(_estimate(f.alpha_us, f.alpha_ci, issue=f.latency_issue) for f in fits)],
            ["bandwidth 1/β (MB/s)", *(_estimate(f.bandwidth_MiBps, f.bandwidth_ci, mb, f.per_byte_issue)
                                       for f in fits)],
            ["per-byte β (ns/B)", *(_estimate(f.beta_us_per_byte, f.beta_ci, 1e3, f.per_byte_issue) for f in fits)],
            ["n½ (bytes)", *(_estimate(f.n_half, f.n_half_ci, issue=why(f)) for f in fits)],
            ["points fitted", *(f"{f.n_points}" + (f" ({len(f.outliers)} left out)" if f.outliers else "")
                                for f in fits)],
        ]
        spikes = (f"<p class=muted>isolated spikes left out: "
                  f"{escape(', '.join(human_size(s) for s in m.report.outliers))}</p>" if m.report.outliers else "")
        parts.append(f"{title}<ul class=switches>{sw or '<li>no protocol switch detected</li>'}</ul>"
                     f"{_table(head, rows, 'model')}{spikes}")
    note = ("<p class=muted>Hockney model T(n) = α + β n per regime between detected switches; brackets are "
            "95% bootstrap intervals over the points. <code>mpiscope model RUN</code> gives the full analysis.</p>")
    return "".join(parts) + note


def _plots(plots: list[Plot]) -> str:
    if not plots:
        return "<p>No plots apply to these runs.</p>"
    figs = [f'<figure id="plot-{escape(p.name)}"><img alt="{escape(p.title)}" '
            f'src="data:image/svg+xml;base64,{_svg(p.figure)}"><figcaption>{escape(p.title)}</figcaption></figure>'
            for p in plots]
    return "".join(figs)


def _cell(row) -> tuple[str, str]:
    ci = f'<span class="ci">{num(row.time_ci_low_us)}–{num(row.time_ci_high_us)}</span>'
    unconverged = not pd.isna(row.converged) and not bool(row.converged)  # a missing value says nothing
    if getattr(row, "stop_reason", None) == "imported":  # another tool's figure: no interval, no stopping rule
        unconverged, ci = False, '<span class="ci">no interval</span>'
    if getattr(row, "evidence", ""):  # an interval that informs nothing is named, never shown as a band
        ci = f'<span class="ci flag">{escape(str(row.evidence))}</span>'
    launches = int(getattr(row, "launches", 1) or 1)
    stopped = getattr(row, "not_converged", None)
    where = f" in {int(stopped)} of {launches} launches" if launches > 1 and stopped == stopped and stopped else ""
    flag = (f' <span class="flag" title="did not converge{where}: {escape(str(row.stop_reason))}">†</span>'
            if unconverged else "")
    above = f' <span class="flag" title="{escape(MARK_NOTE)}">{MARK}</span>' if getattr(row, "above_copy", False) else ""
    return f"{num(row.time_median_us)}{flag} {ci}", num(getattr(row, "bw_median_MBps", None), 4) + above


def _side_by_side(df: pd.DataFrame, heading: str) -> str:
    """Several configurations: `mpiscope table`'s side-by-side table (report/table.py)."""
    from mpiscope.report.table import side_by_side
    parts = []
    for t in side_by_side(df):
        head = [t.size_heading, *(c.replace("\n", ", ") for c in t.columns)]
        rows = [[escape(t.size_label(s)), *(escape(t.cell(s, c)) for c in t.columns)] for s in t.sizes]
        parts.append(heading + _table(head, rows, "data") +
                     f'<p class="muted">MB/s per configuration, the time per message in µs in brackets up to '
                     f'{human_size(t.latency_upto)}; {escape(t.level)}.</p>' +
                     "".join(f'<p class="muted">{escape(line)}</p>' for line in t.note.splitlines()))
    return "".join(parts)


def _one_config(rows: pd.DataFrame, heading: str) -> str:
    """Size down; with several launches the launch-level columns: launches, the share of variance
    between them, and the levels they fell into."""
    several = "launches" in rows and (rows["launches"] > 1).any()
    rows = rows.assign(above_copy=copy_rate_flags(rows))
    heading += _layout_notes(rows)
    if not several:
        est = rows["estimate"].dropna().unique() if "estimate" in rows else ["median"]
        head = ["size", "median µs [95% CI]" if list(est) in ([], ["median"]) else
                f"{'/'.join(map(str, est))} µs (the tool's; no interval)", "MB/s", "samples"]
        body = [[human_size(int(r.size)), *_cell(r), str(int(r.samples)) if r.samples == r.samples else "–"]
                for r in rows.sort_values("size").itertuples()]
        return heading + _table(head, body, "data")
    head = ["size", "estimate µs [95% interval over launches]", "MB/s", "launches", "between launches",
            "launch medians µs", "levels"]
    body = [[human_size(int(r.size)), *_cell(r), str(int(r.launches)), pct(r.share_between),
             f'<span class="launch-medians">{" ".join(num(m) for m in r.point.launch_medians)}</span>',
             f'<span class="modes">{escape(modes_text(r.modes))}</span>' if isinstance(r.modes, tuple) and modes_text(r.modes) else ""]
            for r in rows.sort_values("size").itertuples()]
    return heading + _table(head, body, "data")


def _layout_notes(rows: pd.DataFrame) -> str:
    """The buffer layout a streaming row used, and what the copy-rate mark means if a row has it."""
    layouts = sorted(set(rows["buffers"].dropna())) if "buffers" in rows else []
    notes = [f"buffers: {'/'.join(layouts)}"] if layouts else []
    notes += [MARK_NOTE] if rows["above_copy"].any() else []
    return "".join(f'<p class="muted">{escape(n)}</p>' for n in notes)


def _tables(df: pd.DataFrame) -> str:
    """Per benchmark and rank count, size down: one configuration in detail, several side by side;
    a sweep's configurations side by side per benchmark (`mpiscope table SWEEP_DIR`), whatever
    their rank counts."""
    if df.empty:
        return "<p>No points.</p>"
    d = with_mpi(df)
    parts = []
    if "sweep_config" in d and d["sweep_config"].notna().all() and d["sweep_config"].nunique() > 1:
        for bench, b in d.groupby("benchmark", sort=False):
            if b["sweep_config"].nunique() > 1:
                parts.append(_side_by_side(b, f"<h3>{escape(str(bench))} <span class=muted>configurations side "
                                              f"by side</span></h3>"))
                d = d[d["benchmark"] != bench]  # shown: not again per rank count below
    for (bench, ranks), b in d.groupby(["benchmark", "ranks"], sort=False):
        heading = (f"<h3>{escape(str(bench))} <span class=muted>on {int(ranks)} "
                   f"rank{'s' if int(ranks) != 1 else ''}</span></h3>")
        several = legend_keys(b, exclude=["benchmark", "ranks"], within=["size"])
        parts.append(_side_by_side(b, heading) if several else _one_config(b, heading))
    return "".join(parts) + ('<p class="muted">† did not converge (stopped by its time or repetition cap). '
                             '“between launches”: the share of one launch\'s variance that lies between '
                             'launches; “levels”: distinct levels the launch medians fell into, with the '
                             'share of launches in each.</p>')


def _provenance(run: Run, ctx: Context | None, open_: bool) -> str:
    meta = run.meta()
    mpi = meta.mpi
    env = {**(ctx.env if ctx else {}), **{k: v for part in meta.parts for k, v in part.env.items()}}
    placements = list(dict.fromkeys(", ".join(f"{k}={v}" for k, v in part.placement.to_json().items())
                                    for part in meta.parts))
    ranks = ctx.ranks if ctx else ()
    mapping = _table(["rank", "host", "cpus", "bound"],
                     [[str(r.rank), escape(r.host), escape(_cpus(list(r.cpus))), "yes" if r.bound else "no"]
                      for r in ranks], "mapping") if ranks else "?"
    timer = ctx.timer if ctx else {}

    def of(x, name: str, default: str = "?") -> str:
        v = getattr(x, name, None) if x is not None else None
        return str(v) if v not in (None, "") else default

    rows = [  # cells are HTML
        ("status", escape(f"{meta.status} · started {meta.started or '?'} · finished {meta.finished or '?'}")),
        ("MPI", escape(f"{of(mpi, 'vendor')} {of(mpi, 'version', '')} ({of(mpi, 'name')}, {of(mpi, 'origin')}), "
                       f"MPI standard {of(ctx, 'mpi_version', of(mpi, 'mpi_version'))}")),
        ("library version", f"<pre>{escape(of(ctx, 'mpi_library_version', of(mpi, 'library_version')))}</pre>"),
        ("engine / mpiscope", escape(f"engine {of(ctx, 'engine_version')}, "
                                     f"mpiscope {meta.mpiscope_version or '?'}")),
        ("hosts", escape(f"{', '.join(ctx.hosts) if ctx and ctx.hosts else '?'} · {of(ctx, 'cores_online')} cores "
                         f"online · {'oversubscribed' if ctx and ctx.oversubscribed else 'not oversubscribed'}")),
        ("placement", escape("; ".join(p for p in placements if p)) or "launcher default"),
        ("mapping and binding", mapping),
        ("tuning variables", escape(" ".join(f"{k}={v}" for k, v in sorted(env.items()))) or "none"),
        ("factors", escape(", ".join(f"{k}={v}" for k, v in meta.factors.items())) or "none"),
        ("timer", escape(f"{timer.get('source', '?')}, resolution {timer.get('resolution_s', '?')} s, "
                         f"overhead {timer.get('overhead_s', '?')} s")),
        ("launcher command", f"<code>{escape(shlex.join(meta.launcher_command))}</code>"),
        ("engine command", f"<code>{escape(shlex.join(meta.engine_command))}</code>"),
        ("run directory", f"<code>{escape(str(run.path))}</code>"),
    ]
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return (f'<details{" open" if open_ else ""}><summary>run {escape(run.id)}</summary>'
            f'<table class="prov">{body}</table></details>')


def _cpus(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    runs = [[c for _, c in g] for _, g in groupby(enumerate(cpus), lambda ic: ic[1] - ic[0])]
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# --- the page -------------------------------------------------------------------------------

def page(results: Results, twins: tuple[tuple[str, dict], ...] = ()) -> str:
    """The page of `results`; `twins` (platform file, its calibration record) add their validation
    to those of the platforms the runs were simulated on."""
    from mpiscope.report.calibrate import html_section, twins_of
    runs = list(results.runs)
    records = {run.id: run.records() for run in runs}
    contexts = {rid: recs.context for rid, recs in records.items()}
    df = results.frame
    models = fit_models(df) if "family" in df and ((df["family"] == "p2p") & (df["size"] > 0)).any() else []
    plots = Plots(models).render(results)
    many = len(runs) > 1
    comparison = history = ""
    if many:  # results.compare (scipy.stats) is imported only for a report of several runs
        from mpiscope.report.comparison import section as comparison_section
        comparison = comparison_section(runs, _table)
        from mpiscope.report.history import section as history_section
        from mpiscope.results.changes import history_of
        history = history_section(history_of(runs)[0], _svg, _table)
    calibration = html_section([*dict([*twins_of(contexts.values()), *twins]).items()], _table)  # given win
    nav = "".join(f'<a href="#{s}">{t}</a>' for s, t in (("summary", "Summary"), ("warnings", "Warnings"),
                  ("setup", "Setup"), ("models", "Models"), ("plots", "Plots"), ("tables", "Tables"),
                  ("calibration", "Calibration"), ("comparison", "Comparison"), ("history", "History"),
                  ("provenance", "Provenance"))
                  if s not in OPTIONAL or {"calibration": calibration, "comparison": comparison, "history": history}[s])
    title = f"mpiscope report: {runs[0].id}" + (f" and {len(runs) - 1} more" if many else "")
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    simulated = sorted({str(c.simulation.get("platform") or "a platform file")
                        for c in contexts.values() if c and c.simulation})
    heading = "MPI measurement report" + (f" (simulated: {', '.join(simulated)})" if simulated else "")
    sections = [
        ("summary", "Summary", _what(df, runs, contexts) + _launches(df) + _cards(df)),
        ("warnings", "Warnings", _warnings(results, records, many)),
        ("setup", "Setup checks", doctor_section(contexts)),
        ("models", "Models", _models(models)),
        ("plots", "Plots", _plots(plots)),
        ("tables", "Tables", _tables(df)),
        ("calibration", "Calibration: the twin's validation", calibration),
        ("comparison", "Comparison", comparison),
        ("history", "History", history),
        ("provenance", "Provenance",
         "".join(_provenance(run, contexts[run.id], not many) for run in runs)),
    ]
    body = "".join(f'<section id="{sid}"><h2>{name}</h2>{html}</section>' for sid, name, html in sections
                   if html or sid not in OPTIONAL)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
            f'<header><div class="brand">mpiscope</div><h1>{escape(heading)}</h1>'
            f'<p class="muted">{escape(", ".join(r.id for r in runs))} · generated {generated} by mpiscope '
            f'{__version__}</p><nav>{nav}</nav></header><main>{body}</main></body></html>\n')


@dataclass(frozen=True)
class Html:
    """The HTML reporter (`mpiscope report`, report.html after a run): one self-contained page;
    `twins`: calibrated platforms whose validation it shows too (`mpiscope calibrate`'s page)."""
    twins: tuple[tuple[str, dict], ...] = ()

    def render(self, results: Results) -> str:
        return page(results, self.twins)


def render(runs: list[Run] | Results, twins: tuple[tuple[str, dict], ...] = ()) -> str:
    """The page of runs (or of their results, built already)."""
    return report(runs, Html(twins))


def write_report(runs: list[Run] | Results, path: Path, twins: tuple[tuple[str, dict], ...] = ()) -> Path:
    """The report of runs or their results: a file written whole or not at all (a full disk leaves
    the previous one, or none); standard output ('-'), a FIFO or a device written into."""
    write_output(path, render(runs, twins))
    return path
