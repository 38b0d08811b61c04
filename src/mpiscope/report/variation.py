"""The launch-to-launch variation of `analysis.variation` as terminal tables: per size, and
summed up per configuration and benchmark."""
from __future__ import annotations

import numpy as np
import pandas as pd
from rich.table import Table

from mpiscope.util.console import make_table
from mpiscope.report.numbers import pct


def _pct(x: float) -> str:
    return pct(x, 1, missing="-")


def variation_table(v: pd.DataFrame) -> Table:
    # an imported point's estimate is the tool's mean (docs/import.md): the heading names the
    # statistic when every row has the same, else each figure says its own
    kinds = set(v["estimate"]) if "estimate" in v else {"median"}
    one = next(iter(kinds)) if len(kinds) == 1 else None
    table = make_table("variation within and between launches",
                       ("config", "benchmark", "size", "launches", f"{one or 'estimate'} us", "within: CI ±",
                        "between: CV", "between: range", "share between", "F test p"), left=("config", "benchmark"))
    for r in v.itertuples(index=False):
        p = getattr(r, "p", np.nan)
        figure = f"{r.median_us:.3g}" + ("" if one else f" ({getattr(r, 'estimate', 'median')})")
        table.add_row(str(r.config).replace("\n", ", "), r.benchmark, str(r.size), str(r.launches),
                      figure, _pct(r.within_ci_rel), _pct(r.between_cv), _pct(r.between_range_rel),
                      _pct(getattr(r, "share_between", np.nan)), "-" if np.isnan(p) else f"{p:.2g}")
    return table


def summary_table(v: pd.DataFrame) -> Table:
    """Per configuration and benchmark, over its sizes: typical within- and between-launch variation."""
    table = make_table("launch-to-launch variation (median over sizes; worst size)",
                       ("config", "benchmark", "launches", "within: CI ±", "between: CV", "worst CV at",
                        "launches differ (p<0.01)"), left=("config", "benchmark"))
    for (config, bench), g in v.groupby(["config", "benchmark"], sort=False):
        worst = g.loc[g["between_cv"].idxmax()] if g["between_cv"].notna().any() else None
        differ = int((g["p"] < 0.01).sum()) if "p" in g else 0
        table.add_row(str(config).replace("\n", ", "), bench, str(int(g["launches"].max())),
                      _pct(g["within_ci_rel"].median()), _pct(g["between_cv"].median()),
                      "-" if worst is None else f"{int(worst['size'])} B ({_pct(worst['between_cv'])})",
                      f"{differ} of {len(g)} sizes")
    return table
