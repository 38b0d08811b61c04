"""The launch-to-launch variation of `analysis.variation` as terminal tables: per size, and
summed up per configuration and benchmark."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
from rich.table import Table

from mpiscope.util.console import make_table
from mpiscope.report.numbers import pct
from mpiscope.results.policy import POLICY


def _pct(x: float) -> str:
    return pct(x, 1, missing="-")


def _natural(text: str) -> list[tuple[int, str]]:
    """A sort key that puts "allreduce (4 ranks)" before "allreduce (16 ranks)"."""
    return [(int(t), "") if t.isdigit() else (-1, t) for t in re.split(r"(\d+)", text)]


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
                        f"launches differ (p<{POLICY.heterogeneity_alpha:g})"), left=("config", "benchmark"))
    configs = list(dict.fromkeys(v["config"]))  # the sweep's order of configurations
    groups = sorted(v.groupby(["config", "benchmark"], sort=False),
                    key=lambda kv: (configs.index(kv[0][0]), _natural(kv[0][1])))
    for (config, bench), g in groups:
        worst = g.loc[g["between_cv"].idxmax()] if g["between_cv"].notna().any() else None
        differ = int((g["p"] < POLICY.heterogeneity_alpha).sum()) if "p" in g else 0
        table.add_row(str(config).replace("\n", ", "), bench, str(int(g["launches"].max())),
                      _pct(g["within_ci_rel"].median()), _pct(g["between_cv"].median()),
                      "-" if worst is None else f"{int(worst['size'])} B ({_pct(worst['between_cv'])})",
                      f"{differ} of {len(g)} sizes")
    return table
