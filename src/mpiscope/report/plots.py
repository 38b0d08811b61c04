"""Figures from the tidy table at the launch level (results.frame): point-to-point latency and
bandwidth with each point's estimate, its 95 % interval as a band and every launch's median as a
dot beside it, and the fitted Hockney model; collectives against size and rank count, the ring
case study, pair matrices.

Every function takes the tidy table (or its launch-level frame) and returns its Figure (and saves
it when given a path); `all_plots` picks the ones that apply to a set of runs."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullLocator

from mpiscope.analysis.measured import select
from mpiscope.analysis.policy import ANALYSIS
from mpiscope.analysis.switches import SwitchReport, find_switches
from mpiscope.analysis.ring import ALGORITHM_NAMES
from mpiscope.analysis.ring import points as ring_points
from mpiscope.records import Point
from mpiscope.results.table import points_of
from mpiscope.report.axes import finish, plt, save, size_axis
from mpiscope.report.configs import legend_keys, series, with_mpi
from mpiscope.results.frame import is_launch_level, launch_frame
from mpiscope.results.view import Results
from mpiscope.util.units import human_size

COLLECTIVE = ("coll", "nbc", "neighbor", "persistent")
# The launch dots of one point spread over at most this many octaves of the x axis.
DOT_SPREAD = 0.3


@dataclass
class Plot:
    name: str          # file stem
    title: str         # caption
    figure: Figure

    def _repr_png_(self) -> bytes:
        """A notebook shows a plot as its image (the backend is Agg: figures never show themselves)."""
        import io
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=100, bbox_inches="tight")
        return buf.getvalue()


@dataclass
class SeriesModel:
    label: str
    benchmark: str
    report: SwitchReport | None
    problem: str | None = None


def _style(ax) -> None:
    ax.grid(True, which="major", color="#d0d4da", linewidth=0.6)
    ax.grid(True, which="minor", axis="y", color="#eef0f3", linewidth=0.4)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _plain_log(ax, axis: str = "y", base: int = 10) -> None:
    """Log axis with ticks written as plain numbers (0.5, 10, 2000), not powers."""
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log", base=base)
    which = ax.yaxis if axis == "y" else ax.xaxis
    which.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    which.set_minor_formatter(FuncFormatter(lambda v, _: _minor_label(which, v)))


def _minor_label(axis, v: float) -> str:
    """Label 2x and 5x minor ticks, and only when the axis spans too few decades for the
    major ticks to say enough."""
    lo, hi = axis.get_view_interval()
    lead = round(v / 10 ** np.floor(np.log10(v))) if v > 0 else 0
    return f"{v:g}" if lo > 0 and hi / lo < 30 and lead in (2, 5) else ""


# Collective panels: large enough to read, and one time axis per row of panels, so the
# collectives of a row compare at a glance (barrier beside alltoall)
COLLECTIVE_PANEL = {"width": 5.2, "height": 3.8, "sharey": "row"}


def _grid(n: int, width: float = 4.0, height: float = 3.1, sharey: str | bool = False) -> tuple[Figure, list]:
    cols = min(n, 3 if n > 4 else 2 if n > 1 else 1)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols + 1, height * rows + 0.9), squeeze=False,
                             sharey=sharey)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _palette(d: pd.DataFrame, keys: Sequence[str]) -> dict[str, tuple]:
    """A colour per legend label, so every panel of a figure draws a configuration alike."""
    labels = [label for label, _ in series(d, keys)]
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    return {label: cmap(i % cmap.N) for i, label in enumerate(labels)}


def launch_dots(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row index, launch median µs, offset) of every launch of rows of the launch-level frame
    whose point took more than one launch; offsets spread one point's dots side by side in the
    order of the launches (in units of a dot's width, centred on 0)."""
    idx, med, off = [], [], []
    for i, lp in enumerate(rows["point"] if "point" in rows else []):
        ms = getattr(lp, "launch_medians", ())
        if len(ms) < 2:
            continue
        idx += [i] * len(ms)
        med += list(ms)
        off += list(np.arange(len(ms)) - (len(ms) - 1) / 2)
    return np.array(idx, int), np.array(med, float), np.array(off, float)


def _draw(ax, x, rows: pd.DataFrame, color, label: str | None, bandwidth: bool = False) -> bool:
    """One configuration's estimates over the band of their 95 % intervals, as time or as
    bandwidth, and each launch's median as a small dot beside its point (points of several
    launches; launches in order, left to right: levels show as clusters). True if dots were drawn."""
    bpo = rows["bytes_per_op"].to_numpy(float)
    if bandwidth:
        lo, hi = bpo / rows["time_ci_high_us"].to_numpy(float), bpo / rows["time_ci_low_us"].to_numpy(float)
        y = rows["bw_median_MBps"].to_numpy(float)
    else:
        lo, hi, y = (rows[c].to_numpy(float) for c in ("time_ci_low_us", "time_ci_high_us", "time_median_us"))
    if "evidence" in rows:  # an interval flagged as no evidence is not drawn as a band
        flagged = rows["evidence"].fillna("").astype(str).str.len().to_numpy() > 0
        lo, hi = np.where(flagged, np.nan, lo), np.where(flagged, np.nan, hi)
    ax.fill_between(x, lo, hi, color=color, alpha=0.22, linewidth=0, gid="ci-band")
    ax.plot(x, y, marker="o", markersize=2.8, linewidth=1.4, color=color, label=label, gid="series")
    idx, med, off = launch_dots(rows)
    if not len(idx):
        return False
    most = max(np.bincount(idx).max() - 1, 1)
    xs = np.asarray(x, float)[idx] * 2.0 ** (off * min(0.06, DOT_SPREAD / most))
    ax.scatter(xs, bpo[idx] / med if bandwidth else med, s=6, color=color, alpha=0.55, linewidths=0,
               zorder=3, gid="launch-dots")
    return True


def _figure_legend(fig: Figure, colors: dict[str, tuple]) -> None:
    """One legend for all panels, hanging below the figure (saved with a tight bounding box)."""
    if colors:
        fig.tight_layout()
        fig.legend([Line2D([], [], color=c, marker="o", markersize=3) for c in colors.values()], list(colors),
                   loc="upper center", ncol=min(len(colors), 4), frameon=False, fontsize=8,
                   bbox_to_anchor=(0.5, 0.0))


def _size_panels(fig: Figure, axes, d: pd.DataFrame, keys: Sequence[str], column: str, panels: list,
                 title: Callable[[object], str], bandwidth: bool = False) -> None:
    """A panel against message size per value of `column`, a line per legend label, one legend
    (laid out last: label the axes first)."""
    colors = _palette(d, keys)
    for ax, value in zip(axes, panels):
        _style(ax)
        for label, rows in series(d[d[column] == value], keys):
            _draw(ax, rows["size"].to_numpy(float), rows, colors[label], label, bandwidth)
        size_axis(ax)
        _plain_log(ax)
        ax.set_title(title(value), loc="left", fontsize=10)
    _figure_legend(fig, colors)


def _family(df: pd.DataFrame, families: Sequence[str], what: str) -> pd.DataFrame:
    d = df[df["family"].isin(families)] if "family" in df else df.iloc[0:0]
    if d.empty:
        raise ValueError(f"no {what}")
    return with_mpi(d)


# --- point to point ---------------------------------------------------------------------

def _p2p(df: pd.DataFrame) -> pd.DataFrame:
    return _family(df[df["size"] > 0] if "size" in df else df, ["p2p"],
                   "point-to-point measurements (pingpong, bw, ...) with sizes above 0")


def _levels(df: pd.DataFrame) -> pd.DataFrame:
    return df if is_launch_level(df) else launch_frame(df)


def fit_models(df: pd.DataFrame) -> list[SeriesModel]:
    """Regimes, switches and Hockney fits of every point-to-point line of the latency plot, on
    the launch-level estimates."""
    d = _p2p(_levels(df))
    out = []
    for label, rows in series(d, legend_keys(d)):
        bench = str(rows["benchmark"].iloc[0])
        if rows["size"].nunique() < ANALYSIS.min_sizes_for_switches:
            out.append(SeriesModel(label, bench, None, f"fewer than {ANALYSIS.min_sizes_for_switches} sizes: no model"))
            continue
        try:
            rep = find_switches(select(points_of(rows), benchmark=None), reps=ANALYSIS.drawn_reps)
            out.append(SeriesModel(label, bench, rep))
        except (ValueError, np.linalg.LinAlgError) as e:
            out.append(SeriesModel(label, bench, None, str(e)))
    return out


def _overlay(ax, model: SeriesModel | None, color, per_byte: float | None) -> bool:
    """Dashed Hockney line per regime, dotted line per switch; per_byte given: as bandwidth."""
    if model is None or model.report is None:
        return False
    for reg in model.report.regimes:
        lo, hi = max(reg.size_range[0], 1), reg.size_range[1]
        n = np.geomspace(lo, hi, 40)
        t = reg.fit.predict(n)
        y = t if per_byte is None else per_byte * n / np.where(t > 0, t, np.nan)
        ax.plot(n, y, linestyle="--", linewidth=1.0, color=color, alpha=0.9, gid="model")
    for sw in model.report.switches:
        ax.axvline(sw.size, linestyle=":", linewidth=1.0, color=color, alpha=0.8, gid="switch")
    return True


def _p2p_plot(df: pd.DataFrame, bandwidth: bool, models: list[SeriesModel] | None, path) -> Figure:
    d = _p2p(_levels(df))
    by_label = {m.label: m for m in (fit_models(d) if models is None else models)}
    fig, ax = plt.subplots(figsize=(8, 4.8))
    _style(ax)
    drawn = dots = False
    keys = legend_keys(d)
    colors = _palette(d, keys)
    for label, rows in series(d, keys):
        x = rows["size"].to_numpy(float)
        dots |= _draw(ax, x, rows, colors[label], label, bandwidth)
        per_byte = float(np.median(rows["bytes_per_op"].to_numpy(float) / x)) if bandwidth else None
        drawn |= _overlay(ax, by_label.get(label), colors[label], per_byte)
    size_axis(ax)
    _plain_log(ax)
    ax.set_ylabel("bandwidth (MB/s)" if bandwidth else "time per message (µs)")
    ax.set_title("Point-to-point " + ("bandwidth" if bandwidth else "latency"), loc="left")
    handles, labels = ax.get_legend_handles_labels()
    handles.append(plt.Rectangle((0, 0), 1, 1, color="grey", alpha=0.3))
    labels.append("95% interval over launches" if (d["launches"] > 1).any() else "95% CI of the median")
    if dots:
        handles.append(Line2D([], [], color="grey", marker="o", markersize=2.5, linestyle="", alpha=0.6))
        labels.append("one launch's median")
    if drawn:
        handles += [Line2D([], [], color="grey", linestyle="--"), Line2D([], [], color="grey", linestyle=":")]
        labels += ["Hockney fit per regime", "protocol switch"]
    ax.legend(handles, labels, fontsize=8, frameon=False, loc="upper left" if not bandwidth else "lower right")
    return finish(fig, path)


def latency_plot(df: pd.DataFrame, models: list[SeriesModel] | None = None, path=None) -> Figure:
    """Time per message against size, one line per configuration (and benchmark), CI band,
    fitted model and switches."""
    return _p2p_plot(df, False, models, path)


def bandwidth_plot(df: pd.DataFrame, models: list[SeriesModel] | None = None, path=None) -> Figure:
    """Bandwidth (MB/s) against size, as latency_plot."""
    return _p2p_plot(df, True, models, path)


# --- collectives --------------------------------------------------------------------------

def _collectives(df: pd.DataFrame) -> pd.DataFrame:
    """The collective rows: the families of COLLECTIVE without the persistent point-to-point
    rows (a collective point has every rank's mean, t_avg_us)."""
    d = _family(_levels(df), COLLECTIVE, "collective measurements")
    if "t_avg_us" in d:
        d = d[(d["family"] != "persistent") | d["t_avg_us"].notna()]
    else:
        d = d[d["family"] != "persistent"]
    if d.empty:
        raise ValueError("no collective measurements")
    return d


def collective_size_plot(df: pd.DataFrame, path=None) -> Figure:
    """Time per call against size, one panel per collective, one line per configuration and
    rank count."""
    d = _collectives(df)
    d = d[d["size"] > 0]
    if d.empty:
        raise ValueError("no collective measurements with sizes above 0")
    benches = sorted(set(d["benchmark"]))  # by name: a launch measures its points in a shuffled order
    fig, axes = _grid(len(benches), **COLLECTIVE_PANEL)
    fig.suptitle("Collectives: time per call against message size", x=0.01, ha="left")
    for ax in axes:
        ax.set_ylabel("time per call (µs)")
    _size_panels(fig, axes, d, legend_keys(d, exclude=["benchmark"], within=["benchmark", "size"]), "benchmark",
                 benches, str)
    return finish(fig, path)


def _size_labels(sizes: pd.Series) -> pd.Categorical:
    """'8 KiB' labels that sort as sizes, not as text (legends: 8 KiB before 32 KiB)."""
    order = [human_size(int(v)) for v in sorted(sizes.unique())]
    return pd.Categorical(sizes.map(lambda v: human_size(int(v))), categories=order, ordered=True)


def _sizes_to_show(sizes: Sequence[int], most: int = 3) -> list[int]:
    """The smallest, largest and a middle size (geometrically): the shape of scaling at a glance."""
    s = sorted(set(int(v) for v in sizes))
    if len(s) <= most:
        return s
    pos = s[1:] if s[0] == 0 else s
    mid = min(pos, key=lambda v: abs(np.log(v) - (np.log(pos[0]) + np.log(pos[-1])) / 2))
    return sorted({s[0], mid, s[-1]})


def collective_ranks_plot(df: pd.DataFrame, path=None) -> Figure:
    """Time per call against rank count (--npmin runs), one panel per collective, one line per
    size (and configuration)."""
    d = _collectives(df)
    if d["ranks"].nunique() < 2:
        raise ValueError("the collectives ran on one rank count only: use --npmin or runs with different -n")
    benches = sorted(set(d["benchmark"]))  # by name: a launch measures its points in a shuffled order
    d = pd.concat([b[b["size"].isin(_sizes_to_show(b["size"]))] for _, b in d.groupby("benchmark", sort=False)])
    d["message size"] = _size_labels(d["size"])
    keys = legend_keys(d, exclude=["benchmark", "ranks", "size"], first=["message size"],
                       within=["benchmark", "size", "ranks"])
    colors = _palette(d, keys)
    fig, axes = _grid(len(benches), **COLLECTIVE_PANEL)
    fig.suptitle("Collectives: time per call against rank count", x=0.01, ha="left")
    for ax, bench in zip(axes, benches):
        _style(ax)
        for label, rows in series(d[d["benchmark"] == bench], keys):
            rows = rows.sort_values("ranks")
            _draw(ax, rows["ranks"].to_numpy(float), rows, colors[label], label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(d["ranks"].unique()))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        _plain_log(ax)
        ax.set_xlabel("ranks")
        ax.set_ylabel("time per call (µs)")
        ax.set_title(bench, loc="left", fontsize=10)
    _figure_legend(fig, colors)  # a colour is one size (and configuration) in every panel
    return finish(fig, path)


# --- the ring case study ------------------------------------------------------------------

def _ring(df: pd.DataFrame) -> pd.DataFrame:
    """Ring rows (sizes above 0) with the study's factors as columns (analysis.ring), the
    algorithm as its legend label."""
    d = ring_points(_levels(df))
    d = d[d["size"] > 0]
    if d.empty:
        raise ValueError("no ring case study measurements (ringcs1..5)")
    d = with_mpi(d)
    d["algorithm"] = d["algorithm"].map(lambda k: f"{k}: {ALGORITHM_NAMES.get(k, '?')}")
    return d


_RING_SOURCES = ["benchmark", "factor_algorithm", "factor_load", "factor_nblock", "opt_ncompute_a",
                 "opt_ncompute_b", "opt_nblock", "series", "algorithm", "load", "nblock", "nblock_series"]


def ring_size_plot(df: pd.DataFrame, path=None) -> Figure:
    """Bandwidth (including computation) against size, one line per algorithm, one panel per load."""
    d = _ring(df)
    d = d[~d["nblock_series"]]
    if d.empty:
        raise ValueError("only MPI_Testall (nblock) series: no ring bandwidth against size")
    loads = sorted(d["load"].unique(), key=lambda v: (v != "balanced", v))
    keys = legend_keys(d, exclude=_RING_SOURCES[:-4] + ["load"], first=["algorithm"],
                       within=["load", "size"])
    fig, axes = plt.subplots(1, len(loads), figsize=(5.2 * len(loads) + 0.6, 4.6), sharey=True, squeeze=False)
    fig.suptitle("Ring case study: bandwidth against message size", x=0.01, ha="left")
    axes[0][0].set_ylabel("bandwidth incl. computation (MB/s)")
    _size_panels(fig, axes[0], d, keys, "load", loads, lambda load: f"{load} load", bandwidth=True)
    return finish(fig, path)


def ring_nblock_plot(df: pd.DataFrame, path=None) -> Figure:
    """Bandwidth of algorithm 5 against the elements computed between MPI_Testall calls, one line
    per message size."""
    d = _ring(df)
    d = d[d["nblock_series"]] if d["nblock_series"].any() else d[d["benchmark"] == "ringcs5"]
    if d["nblock"].nunique() < 2:
        raise ValueError("ring algorithm 5 ran with one nblock only: no nblock figure")
    d = d.copy()
    d["message size"] = _size_labels(d["size"])
    keys = legend_keys(d, exclude=_RING_SOURCES, first=["message size"], within=["size", "nblock"])
    keys = keys if "message size" in keys else ["message size", *keys]  # one line per size, always named
    fig, ax = plt.subplots(figsize=(8, 4.6))
    _style(ax)
    colors = _palette(d, keys)
    for label, rows in series(d, keys):
        rows = rows.sort_values("nblock")
        _draw(ax, rows["nblock"].to_numpy(float), rows, colors[label], label, bandwidth=True)
    _plain_log(ax, "x", base=2)
    _plain_log(ax)
    ax.set_xlabel("elements computed between MPI_Testall calls (nblock)")
    ax.set_ylabel("bandwidth incl. computation (MB/s)")
    ax.set_title("Ring algorithm 5: MPI_Testall frequency", loc="left")
    ax.legend(fontsize=8, frameon=False)
    return finish(fig, path)


# --- pair matrices ------------------------------------------------------------------------

def matrix_plot(matrix: Sequence[Sequence[float | None]], ranks: Sequence[int] | int | None = None,
                unit: str = "µs", title: str = "", path=None) -> Figure:
    """A rank x rank heat map (row: sending rank, column: receiving rank); missing pairs (None,
    the diagonal) are left blank."""
    m = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix], dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.size == 0:
        raise ValueError(f"a pair matrix must be square and non-empty, got shape {m.shape}")
    n = m.shape[0]
    names = list(ranks) if isinstance(ranks, (list, tuple)) and len(ranks) == n else list(range(n))
    fig, ax = plt.subplots(figsize=(min(3.2 + 0.45 * n, 10), min(2.6 + 0.45 * n, 9)))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#eceef1")
    im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, gid="matrix")
    fig.colorbar(im, ax=ax, label=unit, shrink=0.85)
    step = max(1, n // 16)
    ax.set_xticks(range(0, n, step), [str(r) for r in names[::step]])
    ax.set_yticks(range(0, n, step), [str(r) for r in names[::step]])
    ax.set_xlabel("receiving rank")
    ax.set_ylabel("sending rank")
    if n <= 8:
        mid = np.nanmean(m) if np.isfinite(m).any() else 0
        for (i, j), v in np.ndenumerate(m):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=8,
                        color="white" if v < mid else "black")
    ax.set_title(title, loc="left", fontsize=10)
    return finish(fig, path)


# The pair map's modes (docs/engine.md), the first the benchmark's headline map.
PAIR_MODES = {"one_pair": "one pair at a time", "rings": "all pairs at once (shifted rings)"}


def pair_map_plots(point: Point, run_id: str = "") -> list[Plot]:
    """A point's rank x rank maps of the time per message, one per mode it measured."""
    maps = point.details.get("pair_map")
    out: list[Plot] = []
    for mode, label in PAIR_MODES.items():
        m = maps.get(mode) if isinstance(maps, dict) else None
        if not isinstance(m, dict) or not isinstance(m.get("matrix_us"), list):
            continue
        title = f"{point.benchmark} {human_size(point.size)} per rank pair, {label}" + (
            f" (run {run_id})" if run_id else "")
        stem = f"matrix-{point.benchmark}-{point.size}" + ("" if mode == "one_pair" else f"-{mode}") + (
            f"-{run_id}" if run_id else "")
        out.append(Plot(stem, title, matrix_plot(m["matrix_us"], point.ranks, "µs", title)))
    return out


# --- everything that applies --------------------------------------------------------------

def all_plots(df: pd.DataFrame, models: list[SeriesModel] | None = None) -> list[Plot]:
    """Every figure the data supports, in reading order: a figure without its data (a
    ValueError) is left out."""
    df = _levels(df)
    if models is None:
        try:
            models = fit_models(df)
        except ValueError:  # no point-to-point lines: no latency or bandwidth figure either
            models = []
    figures: list[tuple[str, str, Callable[[], Figure]]] = [
        ("latency", "Point-to-point latency against message size", lambda: latency_plot(df, models)),
        ("bandwidth", "Point-to-point bandwidth against message size", lambda: bandwidth_plot(df, models)),
        ("collectives-size", "Collectives: time per call against size", lambda: collective_size_plot(df)),
        ("collectives-ranks", "Collectives: time per call against rank count", lambda: collective_ranks_plot(df)),
        ("ring-size", "Ring case study: bandwidth against message size per algorithm", lambda: ring_size_plot(df)),
        ("ring-nblock", "Ring case study: bandwidth against MPI_Testall frequency", lambda: ring_nblock_plot(df)),
    ]
    plots: list[Plot] = []
    for name, title, draw in figures:
        try:
            plots.append(Plot(name, title, draw()))
        except ValueError:
            continue
    many = "run_id" in df and df["run_id"].nunique() > 1
    for point, run_id in zip(points_of(df), df["run_id"] if "run_id" in df else [""] * len(df)):
        launches = getattr(point, "points", None) or (point,)  # a map per point: its last launch's
        plots += pair_map_plots(launches[-1], str(run_id) if many else "")
    return plots


@dataclass(frozen=True)
class Plots:
    """The plot reporter (`mpiscope plot`, the API's `plots`, the HTML report's figures): every
    figure that applies to the results' launch-level frame."""
    models: list[SeriesModel] | None = None

    def render(self, results: Results) -> list[Plot]:
        return all_plots(results.frame, self.models) if not results.frame.empty else []


def write_plots(plots: list[Plot], out_dir: Path, fmt: str = "png") -> list[Path]:
    """Every plot, or (when one cannot be written: a full disk) none of the new ones: a set cut
    short would pass for the whole set. Each file is written whole (`save`)."""
    made_dir = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    new: list[Path] = []
    try:
        for p in plots:
            path = out_dir / f"{p.name}.{fmt}"
            existed = path.exists()
            save(p.figure, path)
            paths.append(path)
            if not existed:
                new.append(path)
    except BaseException:
        for path in new:
            path.unlink(missing_ok=True)
        if made_dir:
            try:
                out_dir.rmdir()
            except OSError:
                pass
        raise
    return paths
