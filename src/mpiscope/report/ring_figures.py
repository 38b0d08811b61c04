"""The ring case study's figures and tables (the chapter's FIGURE 4-3..4-9 and its deadlock
findings), from a study run's records or its tidy table: `fig = f(df_or_records)`, then save."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from mpiscope.report.axes import save, size_axis
from mpiscope.sizes import human_size

ALGORITHM_NAMES = {
    1: "Send, Recv",
    2: "Sendrecv_replace",
    3: "Sendrecv, double buffer",
    4: "Isend/Irecv, Waitall",
    5: "Isend/Irecv, Testall",
}
_TAG_COLUMNS = ["series", "algorithm", "load", "nblock"]


def algorithm_label(k: int) -> str:
    return f"alg {k}: {ALGORITHM_NAMES.get(k, '?')}"


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


def _curves(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The size sweeps (not the nblock ones), one per algorithm x tuning level."""
    sweep = df[df["nblock"].isna()]
    envs = env_columns(df)
    out = []
    for keys, part in sweep.groupby(["algorithm", *envs], dropna=False, sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        label = algorithm_label(int(keys[0])) + "".join(f", {c[4:]}={v}" for c, v in zip(envs, keys[1:]))
        out.append((label, part.sort_values("size")))
    return out


def bandwidth_vs_size(data: pd.DataFrame | list[dict], title: str = "") -> plt.Figure:
    """FIGURES 4-3..4-7: bandwidth (including computation) against message size, one line per
    algorithm, balanced and imbalanced load side by side."""
    df = points(data)
    loads = [ld for ld in ("balanced", "imbalanced") if ld in set(df["load"])] or ["balanced"]
    fig, axes = plt.subplots(1, len(loads), figsize=(6.5 * len(loads), 4.5), squeeze=False, sharey=False)
    for ax, load in zip(axes[0], loads):
        part = df[(df["load"] == load) & (df["size"] > 0)]
        for label, curve in _curves(part):
            ax.plot(curve["size"], curve["bw_MBps"], marker=".", label=label)
        size_axis(ax)
        ax.set_yscale("log")
        ax.set_ylabel("bandwidth 16n/t (MB/s, includes computation)")
        ax.set_title(f"{load} load")
        ax.grid(True, which="major", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def bandwidth_vs_nblock(data: pd.DataFrame | list[dict], title: str = "") -> plt.Figure:
    """FIGURE 4-9: algorithm 5's bandwidth against the computation between MPI_Testall calls
    (nblock elements), one line per message size (the chapter: 64 KiB and 1 MiB)."""
    df = points(data)
    part = df[df["nblock"].notna() & (df["algorithm"] == 5)]
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    envs = env_columns(df)
    for keys, curve in part.groupby(["size", *envs], sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        label = human_size(int(keys[0])) + "".join(f", {c[4:]}={v}" for c, v in zip(envs, keys[1:]))
        curve = curve.sort_values("nblock")
        ax.plot(curve["nblock"], curve["bw_MBps"], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("elements computed between MPI_Testall calls (nblock)")
    ax.set_ylabel("bandwidth 16n/t (MB/s, includes computation)")
    ax.set_title(title or "algorithm 5, imbalanced load")
    ax.grid(True, which="major", alpha=0.3)
    if ax.lines:
        ax.legend(title="message size")
    return fig


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


def write_all(records: list[dict], directory: Path, title: str = "") -> list[Path]:
    """Every figure of the study into `directory`; the paths written."""
    out = []
    for name, fig in (("ring-bandwidth-vs-size.png", bandwidth_vs_size(records, title)),
                      ("ring-bandwidth-vs-nblock.png", bandwidth_vs_nblock(records)),
                      ("ring-deadlocks.png", deadlock_figure(records))):
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
