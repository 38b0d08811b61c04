"""A history's words and pictures (docs/history.md): the compact line of each series, the
sentence of each change point, the figure of a series (each run's estimate with its interval over
time, the segments' levels, the change points, disturbed and state-shifted runs drawn apart) and
the HTML report's section of them."""
from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING, Callable, Sequence

from mpiscope.results.changes import Change, History
from mpiscope.results.series import RunSummary
from mpiscope.util.units import human_size

if TYPE_CHECKING:
    from mpiscope.report.plots import Plot

BARS = "▁▂▃▄▅▆▇█"
APART = {"disturbed": "×", "state shifted": "~"}


def point_label(h: History) -> str:
    """'pingpong 64 KiB' (with its ranks beyond 2, its variant and its study series)."""
    bench, size, ranks, variant = h.series.key[1]
    text = f"{bench}{' ' + variant if variant else ''} {human_size(size)}"
    text += f" {ranks} ranks" if ranks != 2 else ""
    return text + "".join(f" {k}={v}" for k, v in h.series.key[2])


def platform_of(h: History) -> str:
    run = h.series.runs[-1]
    return run.platforms.get(h.series.key[0], "")


def ratio_words(c: Change) -> str:
    """'1.70x slower (95 % interval 1.52-1.90x)'."""
    v = c.verdict
    return f"{v.ratio:.3g}x {v.verdict} (95 % interval {v.low:.3g}-{v.high:.3g}x)"


def sentence(h: History, c: Change) -> str:
    """'pingpong 64 KiB 1.70x slower (...) since run R (2026-11-30): MPIR_CVAR_...=0 appeared in
    the environment'."""
    text = f"{point_label(h)} {ratio_words(c)} since run {c.run} ({c.date})"
    text += f" (measured from run {c.measured_from}: the runs between were kept apart)" if c.measured_from else ""
    text += " (the newest run alone: later runs will confirm it or not)" if c.newest else ""
    if c.changed:
        text += ": " + "; ".join(c.changed)
    else:
        text += ": nothing the runs record changed with it"
    if c.varying:
        text += f" ({c.varying} more fact(s) differ but vary from run to run)"
    return text


def spark(h: History, width: int = 40) -> str:
    """The last `width` runs' estimates as bars (log scale between the clean runs' least and
    greatest), disturbed runs as ×, runs in another state of the machine as ~."""
    obs, flags = h.obs[-width:], h.flags[-width:]
    clean = [math.log(o.median) for o, f in zip(obs, flags) if not f]
    lo, hi = (min(clean), max(clean)) if clean else (0.0, 0.0)
    out = []
    for o, f in zip(obs, flags):
        if f:
            out.append(next((mark for word, mark in APART.items() if f.startswith(word)), "?"))
        else:
            at = (math.log(o.median) - lo) / (hi - lo) if hi > lo else 0.5
            out.append(BARS[min(int(at * len(BARS)), len(BARS) - 1)])
    return "".join(out)


def line(h: History) -> str:
    """One series in a line: point, runs, bars, latest level, and its newest change."""
    latest = h.segments[-1].level if h.segments else h.obs[-1].median
    apart = sum(bool(f) for f in h.flags)
    text = f"{point_label(h):<24} {len(h.obs):>4} runs {spark(h)}  {latest:.3g} us"
    text += f" ({apart} kept apart)" if apart else ""
    if h.changes:
        c = h.changes[-1]
        text += f"  {c.verdict.ratio:.3g}x {c.verdict.verdict} since {c.run}"
    return text


def figure(h: History) -> "Plot":
    """Each run's estimate with its interval over its launches, against the run's order (dates
    on the axis), the segments' levels, the change points, and runs kept apart in grey."""
    from mpiscope.report.axes import plt  # matplotlib only for pictures: the terminal lines need none
    from mpiscope.report.plots import Plot
    fig, ax = plt.subplots(figsize=(7, 3.2))
    obs, flags = h.obs, h.flags
    xs = range(len(obs))
    for apart in (False, True):
        idx = [i for i in xs if bool(flags[i]) == apart]
        if not idx:
            continue
        med = [obs[i].median for i in idx]
        low = [obs[i].median - obs[i].low if math.isfinite(obs[i].low) else 0 for i in idx]
        high = [obs[i].high - obs[i].median if math.isfinite(obs[i].high) else 0 for i in idx]
        ax.errorbar(idx, med, yerr=[low, high], fmt="x" if apart else "o", ms=4, capsize=2,
                    color="0.6" if apart else "C0", label="kept apart (disturbed or state shifted)" if apart
                    else "run estimate, 95 % interval over its launches")
    for seg in h.segments:
        ax.hlines(seg.level, seg.start - 0.4, seg.end - 0.6, colors="C1", lw=2)
    for c in h.changes:
        ax.axvline(c.at - 0.5, color="C3", ls="--" if c.newest else "-", lw=1)
        ax.annotate(f"{c.verdict.ratio:.2g}x", (c.at - 0.5, 1), xycoords=("data", "axes fraction"),
                    ha="left", va="top", color="C3", fontsize=8)
    runs = h.series.runs
    step = max(1, len(runs) // 8)
    ax.set_xticks(list(range(0, len(runs), step)), [runs[i].date for i in range(0, len(runs), step)],
                  rotation=30, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("time (us)")
    ax.set_title(f"{point_label(h)}: {platform_of(h)}", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    bench, size, ranks, variant = h.series.key[1]
    name = f"history-{bench}{'-' + variant if variant else ''}-{size}B-{ranks}r-{h.series.key[0][:6]}"
    return Plot(name, f"{point_label(h)} over {len(runs)} runs", fig)


def worth_drawing(histories: Sequence[History], most: int = 24) -> list[History]:
    """The series with changes first, then the others, of at least 3 runs; at most `most`."""
    ranked = sorted((h for h in histories if len(h.obs) >= 3), key=lambda h: not h.changes)
    return ranked[:most]


def section(histories: Sequence[History], svg: Callable, table: Callable) -> str:
    """The HTML report's history: the change points in words, then each series' figure."""
    if not any(len(h.obs) >= 3 for h in histories):
        return ""
    changes = [(h, c) for h in histories for c in h.changes]
    words = ("".join(f"<li>{escape(sentence(h, c))}</li>" for h, c in changes) if changes else
             "<li>no change point beyond the margin</li>")
    notes = "".join(f"<li>{escape(point_label(h))}: {escape(n)}</li>" for h in histories for n in h.state_notes)
    rows = [[escape(point_label(h)), escape(platform_of(h)), str(len(h.obs)), str(sum(bool(f) for f in h.flags)),
             f"{h.segments[-1].level:.3g}" if h.segments else "–",
             escape("; ".join(ratio_words(c) + f" since {c.run}" for c in h.changes) or "–")] for h in histories]
    figures = "".join(f'<figure><img alt="{escape(p.title)}" src="data:image/svg+xml;base64,{svg(p.figure)}">'
                      f"<figcaption>{escape(p.title)}</figcaption></figure>"
                      for p in map(figure, worth_drawing(histories)))
    return (f"<p>Each run's launch-level estimate in time order, per point and platform; change points "
            f"found by binary segmentation and kept where the verdict between the runs on either side is "
            f"slower or faster beyond the margin (docs/history.md).</p><ul>{words}</ul>"
            + (f"<p>Not changes:</p><ul>{notes}</ul>" if notes else "")
            + table(["point", "platform", "runs", "kept apart", "latest level (us)", "changes"], rows)
            + figures)


def runs_line(runs: Sequence[RunSummary]) -> str:
    if not runs:
        return "no runs"
    return f"{len(runs)} runs from {runs[0].date} to {runs[-1].date}"
