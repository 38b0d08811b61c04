"""Shared matplotlib conventions: the non-interactive backend, log-size axes labelled 1K/1M."""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on clusters or in CI

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

from mpiscope.util.output import write_output  # noqa: E402
from mpiscope.util.units import human_size  # noqa: E402


def tick_size(v: float) -> str:
    """A byte count as a short tick label: 1, 64, 4K, 1M, 1G (binary); others as plain bytes."""
    n = int(round(v))
    if v < 1:
        return ""
    return human_size(n).replace(" ", "").replace("iB", "").removesuffix("B") or "0"


def size_axis(ax: "plt.Axes", axis: str = "x", label: str = "message size") -> None:
    """Log base-2 axis of byte sizes with ticks such as 1, 64, 4K, 1M."""
    which = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
    which.set_major_locator(LogLocator(base=4))
    which.set_major_formatter(FuncFormatter(lambda v, _: tick_size(v)))
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)(f"{label} (bytes)")


def finish(fig: "plt.Figure", path=None) -> "plt.Figure":
    """Lay the figure out and, given a path, write it (PNG or SVG by the file's suffix)."""
    if not fig.legends:  # a figure-level legend is placed after the layout: keep it
        fig.tight_layout()
    if path is not None:
        # a legend below the axes stays in the file; a FIFO or a device named like it is written
        # into, never replaced (write_output), and a failed write leaves no part of a file
        image = io.BytesIO()
        fig.savefig(image, format=Path(path).suffix.lstrip(".").lower() or "png", dpi=120, bbox_inches="tight")
        write_output(path, image.getvalue())
    return fig


def save(fig: "plt.Figure", path) -> None:
    """Write the figure, then free it."""
    plt.close(finish(fig, path))
