"""tune's figure for tune.html: per collective and rank count, the time of each algorithm the
race measured at each size with the one written into the file marked, and below it the
side-by-side gain of the file over the default with its 95 % interval and verdict."""
from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from mpiscope.report.axes import finish, plt, size_axis
from mpiscope.mpi.collectives import DEFAULT

CLIP = (1 / 8, 8)  # the gain axis
VERDICT_COLOURS = {"faster": "#2a9d4a", "slower": "#c0392b", "same": "#7f8c8d", "inconclusive": "#e0a030"}


def _x(size: int) -> int:
    return max(size, 1)  # barrier is sizeless (0 bytes): drawn at 1 on the log axis


def tune_figure(result: dict, coll: str, ranks: int) -> Figure | None:
    """The figure of one collective at one rank count, or None when the race measured nothing."""
    rows = sorted((d for d in result["decisions"] if d["collective"] == coll and d["ranks"] == ranks and d.get("times")),
                  key=lambda d: d["size"])
    if not rows:
        return None
    verify = {v["size"]: v for v in result.get("verify", []) if v["collective"] == coll and v["ranks"] == ranks}
    fig, (top, low) = plt.subplots(2, 1, figsize=(7.5, 5.6), sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
    names = list(dict.fromkeys(a for d in rows for a in d["times"]))
    for name in names:
        xs = [_x(d["size"]) for d in rows if name in d["times"]]
        ys = [d["times"][name] for d in rows if name in d["times"]]
        style = {"color": "black", "linewidth": 2, "linestyle": "--", "zorder": 3} if name == DEFAULT else \
            {"linewidth": 1, "alpha": 0.75}
        top.plot(xs, ys, marker=".", label=name, **style)
    chosen = [(d["size"], d["times"][d["chosen"]]) for d in rows if d["chosen"] in d["times"]]
    top.scatter([_x(s) for s, _ in chosen], [t for _, t in chosen], s=140, facecolors="none", edgecolors="#2a9d4a",
                linewidths=2, zorder=4, label="written to the file")
    top.set_yscale("log")
    top.set_ylabel("time per call (us)")
    top.set_title(f"{coll} at {ranks} ranks: each algorithm's launch medians (geometric mean)")
    top.legend(fontsize=7, ncol=2, loc="upper left", frameon=False)
    low.axhline(1.0, color="#555", linewidth=0.8)
    for size, v in sorted(verify.items()):
        gain, lo, hi = 1 / v["ratio"], 1 / v["high"], 1 / v["low"]
        colour = VERDICT_COLOURS.get(v["verdict"], "#555")
        # an interval of a few noisy launches can span decades: drawn up to the axis' edge
        at = min(max(gain, CLIP[0]), CLIP[1])
        err = [[at - min(max(lo, CLIP[0]), at)], [max(min(hi, CLIP[1]), at) - at]] if lo == lo and hi == hi else None
        low.errorbar([_x(size)], [at], yerr=err, fmt="o", color=colour, capsize=3)
        what = v["verdict"] if v["algorithm"] != DEFAULT else "control"
        label = f"{gain:.3g}x [{lo:.3g}, {hi:.3g}] {what}" if err else f"{gain:.3g}x {what}"
        low.annotate(label, (_x(size), at), fontsize=6, xytext=(4, 4), textcoords="offset points", color=colour)
    low.set_yscale("log", base=2)
    low.set_ylim(*CLIP)
    low.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    low.set_ylabel("gain over default\n(default / tuned)", fontsize=8)
    if not verify:
        low.text(0.5, 0.5, "no side-by-side run: the file changes nothing", transform=low.transAxes, ha="center",
                 fontsize=8, color="#555")
    size_axis(low)
    for ax in (top, low):
        ax.grid(True, color="#d0d4da", linewidth=0.6)
    return finish(fig)


def tune_figures(result: dict) -> list[tuple[str, Figure]]:
    """(caption, figure) per collective and rank count, in the result's order."""
    out = []
    for key in dict.fromkeys((d["collective"], d["ranks"]) for d in result["decisions"]):
        fig = tune_figure(result, *key)
        if fig is not None:
            out.append((f"{key[0]} at {key[1]} ranks", fig))
    return out
