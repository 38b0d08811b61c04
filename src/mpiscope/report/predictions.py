"""Collective predictions (analysis/predict.py) and their validation (analysis/validate.py) as
text."""
from __future__ import annotations

import pandas as pd

from mpiscope.analysis.predict import ALGORITHMS
from mpiscope.analysis.validate import validation_summary


def format_winners(table: pd.DataFrame) -> str:
    """Grid of winners: a row per n, a column per p, cells 'algorithm time'."""
    ps = sorted(table["p"].unique())
    ns = sorted(table["n"].unique())
    cell = {(r.p, r.n): f"{r.best} {r.best_us:.3g}" for r in table.itertuples()}
    head = ["n (bytes) \\ p", *[str(p) for p in ps]]
    body = [[f"{int(n)}", *[cell[(p, n)] for p in ps]] for n in ns]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    fmt = lambda r: "  ".join(c.rjust(w) if i == 0 else c.ljust(w)
                              for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    title = f"{table['collective'].iloc[0]}: fastest algorithm and its time (us)"
    return "\n".join([title, fmt(head), *[fmt(r) for r in body]])


def format_validation(table: pd.DataFrame) -> str:
    if table.empty:
        return "No collective points to validate against (benchmarks: " + \
            ", ".join(ALGORITHMS) + ")."
    s = validation_summary(table)
    over = sorted(set(table.loc[table.oversubscribed, "p"])) if "oversubscribed" in table else []
    lines = [f"{'collective':<15} {'p':>3} {'points':>6}  {'|err| best: median':>19} "
             f"{'max':>7}  {'|err| MPICH default: median':>28} {'max':>7}"]
    for r in s.itertuples():
        lines.append(f"{r.collective:<15} {r.p:>3} {r.points:>6}  {r.median_err_best:>19.1%} "
                     f"{r.max_err_best:>7.1%}  {r.median_err_default:>28.1%} "
                     f"{r.max_err_default:>7.1%}")
    if over:
        lines.append(f"warning: the runs at p = {', '.join(map(str, over))} were oversubscribed "
                     f"(more ranks than cores); their errors say nothing about the model")
    return "\n".join(lines)
