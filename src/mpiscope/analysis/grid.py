"""HPL's communication step on every process-grid shape under each task order, ranked: from the
grid rows of the tidy table (the shape, the step's median and its row and column phases, how
many hosts a row or a column spans)."""
from __future__ import annotations

import numpy as np
import pandas as pd

# The tidy table's columns, under the names the ranking gives them.
COLUMNS = {"size": "size", "grid_shape": "shape", "order": "order", "time_median_us": "step_us",
           "phases_us_row": "row_us", "phases_us_column": "column_us", "grid_max_hosts_per_row": "row_hosts",
           "grid_max_hosts_per_column": "column_hosts", "converged": "converged"}


def ranking(df: pd.DataFrame) -> pd.DataFrame:
    """Per panel size, every shape and order from the fastest step to the slowest, with the
    step's time as a multiple of the best (`x_best`)."""
    d = df[df["benchmark"] == "grid"] if "benchmark" in df else pd.DataFrame()
    d = d.reindex(columns=list(COLUMNS)).rename(columns=COLUMNS)
    d = d[d["shape"].notna() & d["step_us"].notna()]
    d = d.sort_values(["size", "step_us"], kind="stable").reset_index(drop=True)
    best = d.groupby("size")["step_us"].transform("min")
    return d.assign(x_best=d["step_us"] / best.where(best > 0, np.nan))
