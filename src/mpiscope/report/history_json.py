"""`mpiscope history --json` (docs/history.md, "JSON"): the runs read, each series' summary (its
runs kept apart, segments, latest estimate) and every change point with its verdict and what
changed with it, for a nightly job's own tooling. No per-run table: `mpiscope export` has it."""
from __future__ import annotations

import math
from typing import Any, Sequence

from mpiscope.report.history import platform_of, sentence
from mpiscope.results.changes import Change, History
from mpiscope.results.series import RunSummary

SCHEMA = 1


def _num(x: float) -> float | None:
    """JSON has no NaN: an unknown figure is null."""
    return float(x) if math.isfinite(x) else None


def change_json(h: History, c: Change) -> dict[str, Any]:
    v = c.verdict
    return {"run": c.run, "date": c.date, "verdict": v.verdict, "ratio": _num(v.ratio), "ratio_low": _num(v.low),
            "ratio_high": _num(v.high), "p": _num(c.p), "runs_before": c.before, "runs_after": c.after,
            "newest": c.newest, "measured_from": c.measured_from or None, "changed": list(c.changed),
            "varying": c.varying, "text": sentence(h, c)}


def series_json(h: History) -> dict[str, Any]:
    bench, size, ranks, variant = h.series.key[1]
    runs, obs = h.series.runs, h.obs
    latest = obs[-1]
    return {"platform": platform_of(h), "benchmark": bench, "size": size, "ranks": ranks, "variant": variant,
            "configuration": dict(h.series.key[2]), "runs": len(runs),
            "kept_apart": [{"run": r.id, "why": f} for r, f in zip(runs, h.flags) if f],
            "drift_sd": _num(h.drift_sd),
            "segments": [{"from": runs[s.start].id, "to": runs[s.end - 1].id, "level_us": _num(s.level)}
                         for s in h.segments],
            "latest": {"run": runs[-1].id, "estimate_us": _num(latest.median), "low_us": _num(latest.low),
                       "high_us": _num(latest.high)},
            "changes": [change_json(h, c) for c in h.changes], "not_changes": list(h.state_notes)}


def history_json(histories: Sequence[History], summaries: Sequence[RunSummary], margin: float, alpha: float,
                 failed: bool | None = None) -> dict[str, Any]:
    """The whole history; `failed`: whether --fail-on fails it (None without --fail-on)."""
    return {"schema": SCHEMA, "margin": margin, "alpha": alpha, "failed": failed,
            "runs": [{"id": s.id, "started": s.started} for s in summaries],
            "series": [series_json(h) for h in histories],
            "changes": sum(len(h.changes) for h in histories)}
