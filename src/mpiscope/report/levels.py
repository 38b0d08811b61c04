"""What the plots draw beside a launch-level row: each launch's own median (the frame itself is
`results.frame.launch_frame`)."""
from __future__ import annotations

import numpy as np
import pandas as pd


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
