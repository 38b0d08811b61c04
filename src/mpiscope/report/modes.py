"""The levels a point's launches (or the runs behind its drift) fell into, in words: the frame
keeps them as values (`results.frame`), every reporter words them here."""
from __future__ import annotations

from typing import Iterable

import pandas as pd

from mpiscope.results.launches import Mode


def modes_text(modes: Iterable[Mode], unit: str = "us") -> str:
    """'2 levels: 0.145 us (60%), 0.4 us (40%)'; '' for one level."""
    modes = list(modes)
    if len(modes) < 2:
        return ""
    return f"{len(modes)} levels: " + ", ".join(f"{m.median:.3g} {unit} ({100 * m.share:.0f}%)" for m in modes)


def run_levels_text(levels: Iterable[tuple[float, float, int]], unit: str = "us") -> str:
    """'in 2 levels: 0.25 us (17 of 20 runs), 1.0 us (3)'; '' for one level."""
    levels = list(levels)
    if len(levels) < 2:
        return ""
    total = sum(n for _, _, n in levels)
    first, *rest = levels
    return (f"in {len(levels)} levels: {first[0]:.3g} {unit} ({first[2]} of {total} runs), "
            + ", ".join(f"{m:.3g} {unit} ({n})" for m, _, n in rest))


def _worded(values: pd.Series, text) -> list[str]:
    return [text(v) if isinstance(v, (tuple, list)) else ("" if v is None or v != v else str(v)) for v in values]


def worded(df: pd.DataFrame) -> pd.DataFrame:
    """The frame with its `modes` and `run_levels` columns in words, as tables and exports show them."""
    if "modes" not in df and "run_levels" not in df:
        return df
    df = df.copy()
    if "modes" in df:
        df["modes"] = _worded(df["modes"], modes_text)
    if "run_levels" in df:
        df["run_levels"] = _worded(df["run_levels"], run_levels_text)
    return df
