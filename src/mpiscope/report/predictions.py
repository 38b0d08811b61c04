"""Collective predictions (analysis/predict.py) and their validation (analysis/validate.py) as
text."""
from __future__ import annotations

import pandas as pd

from mpiscope.analysis.predict import ALGORITHMS
from mpiscope.analysis.validate import validation_summary


def aligned(rows: list[list[str]], left: set[int] = frozenset({0})) -> str:
    """Rows of cells as text columns: the columns in `left` (by index) left-aligned, the figures
    right-aligned."""
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(k) if i in left else c.rjust(k) for i, (c, k) in enumerate(zip(r, w))).rstrip()
                     for r in rows)


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


def format_simulated(table: pd.DataFrame, platform: str, link) -> str:
    """Per collective, each simulated point beside the closed form and its contention share on the
    platform's shared link (`link`, None when there is none to read); then the median error where
    the closed form's assumption holds and where it does not."""
    from mpiscope.analysis.predict import CONTENTION_SHARE
    from mpiscope.report.numbers import num
    from mpiscope.util.units import human_size

    def share(x: float) -> str:
        if x != x:
            return "-"
        return f"{x:.2g}x" + (" impossible" if x >= 1 else " unreliable" if x >= CONTENTION_SHARE else "")

    parts = []
    for coll, g in table.groupby("collective", sort=False):
        rows = [[str(r.p), human_size(int(r.size)), human_size(int(r.n)), r.closed_form, num(r.closed_form_us, 4),
                 num(r.simulated_us, 4), f"{r.error:+.1%}", share(r.contention)]
                for r in g.sort_values(["p", "size"]).itertuples()]
        parts.append(f"{coll} on {platform}: the closed form against the simulation (error = closed form / "
                     f"simulated - 1)\n" + aligned([["p", "size", "n", "closed form", "us", "simulated us",
                                                     "error", "shared link"], *rows], left={3, 7}))
    err = table["error"].abs()
    if link is None:
        parts.append(f"median |error| {err.median():.1%} over {len(table)} points; {platform} has no shared link "
                     f"mpiscope can read: no contention check")
    else:
        bound = table["contention"] >= CONTENTION_SHARE
        said = [f"{what}: median |error| {err[m].median():.1%} over {int(m.sum())} points"
                for what, m in (("where the closed form holds", ~bound),
                                (f"where contention on {link.name} makes it unreliable", bound)) if m.any()]
        parts.append("; ".join(said))
    return "\n\n".join(parts)
