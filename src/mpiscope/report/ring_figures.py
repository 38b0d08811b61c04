"""The ring case study's tables (which algorithm leads, where each deadlocked) and its figure
files: the bandwidth curves are report.plots' ring plots, the deadlock table is drawn here."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from mpiscope.report.axes import save
from mpiscope.store import Run

ALGORITHM_NAMES = {
    1: "Send, Recv",
    2: "Sendrecv_replace",
    3: "Sendrecv, double buffer",
    4: "Isend/Irecv, Waitall",
    5: "Isend/Irecv, Testall",
}
_TAG_COLUMNS = ["series", "algorithm", "load", "nblock"]


def env_columns(df: pd.DataFrame) -> list[str]:
    """The tuning variables a study swept (tag columns env_NAME)."""
    return sorted(c for c in df.columns if c.startswith("env_") and df[c].nunique(dropna=True) > 1)


def points(data: pd.DataFrame | list[dict]) -> pd.DataFrame:
    """One row per measured ringcs point: series tags, size, time and the chapter's bandwidth."""
    if isinstance(data, pd.DataFrame):
        df = data.rename(columns={"bw_median_MBps": "bw_MBps", "time_median_us": "time_us"})
    else:
        rows = [{**{k: v for k, v in r.items() if k in _TAG_COLUMNS or k.startswith("env_")},
                 "benchmark": r.get("benchmark"), "size": r.get("size"),
                 "time_us": (r.get("time_us") or {}).get("median"),
                 "bw_MBps": (r.get("bw_MBps") or {}).get("median")}
                for r in data if r.get("type") == "point" and str(r.get("benchmark", "")).startswith("ringcs")]
        df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=[*_TAG_COLUMNS, "size", "time_us", "bw_MBps"])
    df = df[df["benchmark"].astype(str).str.startswith("ringcs")].copy()
    if "algorithm" not in df:
        df["algorithm"] = df["benchmark"].str.removeprefix("ringcs")
    df["algorithm"] = pd.to_numeric(df["algorithm"]).astype(int)
    df["nblock"] = pd.to_numeric(df["nblock"], errors="coerce") if "nblock" in df else float("nan")
    if "load" not in df:
        df["load"] = "balanced"
    if "series" not in df:
        df["series"] = df["benchmark"]
    return df


def deadlock_table(records: list[dict]) -> pd.DataFrame:
    """Per size sweep: where it deadlocked, or the largest size it completed. A deadlock from
    missing buffering persists at larger sizes, so only a time-out above every measured size
    counts; earlier ones (a busy machine) are listed as `slow`."""
    rows: dict[str, dict] = {}
    for r in records:
        series, kind = r.get("series"), r.get("type")
        if series is None or kind not in ("point", "timeout") or r.get("nblock") is not None:
            continue
        row = rows.setdefault(series, {"series": series, "algorithm": int(r.get("algorithm", 0)),
                                       "load": r.get("load"), "largest_ok": 0, "timeouts": [],
                                       **{k: v for k, v in r.items() if k.startswith("env_")}})
        if kind == "point":
            row["largest_ok"] = max(row["largest_ok"], r["size"])
        else:
            row["timeouts"].append(r["size"])
    for row in rows.values():
        above = [t for t in row["timeouts"] if t > row["largest_ok"]]
        row["deadlock"] = min(above) if above else None
        row["slow"] = sorted(t for t in row["timeouts"] if t < row["largest_ok"])
        slow = f" (timed out at {', '.join(map(str, row['slow']))} bytes, measured beyond)" if row["slow"] else ""
        if row["deadlock"] is None:
            row["result"] = f"no deadlock up to {row['largest_ok']} bytes{slow}"
        elif row["algorithm"] == 1:
            row["result"] = f"deadlock at {row['deadlock']} bytes{slow}"
        else:  # MPI-compliant: cannot deadlock; a time-out is a slow point
            row["result"] = f"timed out at {row['deadlock']} bytes (MPI-compliant: not a deadlock){slow}"
        del row["timeouts"]
    return pd.DataFrame(list(rows.values()))


def deadlock_figure(records: list[dict]) -> plt.Figure:
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


def write_all(run: Run, directory: Path) -> list[Path]:
    """Every figure of the study into `directory` (the curves are the report's own plots);
    the paths written."""
    from mpiscope.report.export import tidy
    from mpiscope.report.plots import ring_nblock_plot, ring_size_plot
    df = tidy([run])
    out = []
    for name, draw in (("ring-bandwidth-vs-size.png", lambda: ring_size_plot(df)),
                       ("ring-bandwidth-vs-nblock.png", lambda: ring_nblock_plot(df)),
                       ("ring-deadlocks.png", lambda: deadlock_figure(run.records().records))):
        try:
            fig = draw()
        except ValueError:  # that series was not measured (e.g. no nblock sweep)
            continue
        path = Path(directory) / name
        save(fig, path)
        out.append(path)
    return out


def nearest_sizes(measured: list[int], targets: list[int]) -> dict[int, int]:
    """For each target size, the measured size nearest to it on a log scale (within 1.5x)."""
    import math
    out = {}
    for t in targets:
        best = min((s for s in measured if s > 0), key=lambda s: abs(math.log(s / t)), default=None)
        if best is not None and 1 / 1.5 <= best / t <= 1.5:
            out[t] = best
    return out


def leaders(data: pd.DataFrame | list[dict]) -> pd.DataFrame:
    """Per load (and tuning level) and size: the algorithm with the highest bandwidth."""
    df = points(data)
    sweep = df[df["nblock"].isna() & (df["size"] > 0) & df["bw_MBps"].notna()]
    keys = ["load", *env_columns(df), "size"]
    if sweep.empty:
        return pd.DataFrame(columns=[*keys, "algorithm", "bw_MBps", "runner_up", "ratio"])
    rows = []
    for key, part in sweep.groupby(keys, sort=True):
        ranked = part.sort_values("bw_MBps", ascending=False)
        top = ranked.iloc[0]
        second = ranked.iloc[1] if len(ranked) > 1 else None
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                     "algorithm": int(top["algorithm"]), "bw_MBps": float(top["bw_MBps"]),
                     "runner_up": None if second is None else int(second["algorithm"]),
                     "ratio": None if second is None else float(top["bw_MBps"] / second["bw_MBps"])})
    return pd.DataFrame(rows)
