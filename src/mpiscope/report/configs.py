"""Which rows of the tidy table belong to which configuration, and legend labels that name only
the factors that differ between the runs plotted."""
from __future__ import annotations

from typing import Iterator, Sequence

import pandas as pd

# Options that change how long or how precisely a point is measured, not what is
# measured: runs that differ only in these are the same configuration.
_NOT_A_FACTOR = {"opt_sizes", "opt_units", "opt_reps", "opt_min_reps", "opt_stop_identical", "opt_max_reps",
                 "opt_ci_target", "opt_max_time_s", "opt_warmup", "opt_warmup_bytes", "opt_timeout_s",
                 "opt_timeout_extends", "opt_max_memory_bytes", "opt_raw", "opt_check", "opt_output", "opt_format",
                 "opt_npmin"}


def with_mpi(df: pd.DataFrame) -> pd.DataFrame:
    """Add `mpi`: 'MPICH 5.0.2', plus the registered name when two libraries share vendor and version."""
    df = df.copy()
    base = df["mpi_vendor"].fillna("?").astype(str) + " " + df["mpi_version"].fillna("").astype(str)
    named = base + " (" + df["mpi_name"].fillna("?").astype(str) + ")"
    ambiguous = df.groupby(base)["mpi_name"].transform("nunique") > 1
    df["mpi"] = named.where(ambiguous, base).str.strip()
    if "simulated" in df and df["simulated"].notna().any():  # every table that names the MPI says so
        sim = df["simulated"].notna()
        df.loc[sim, "mpi"] = df.loc[sim, "mpi"] + " simulated on " + df.loc[sim, "simulated"].astype(str)
    if "tool" in df and df["tool"].notna().any():  # imported (mpiscope import): the label given, the tool
        imp = df["tool"].notna()
        label = df["mpi_library_version"].fillna("").astype(str) if "mpi_library_version" in df else ""
        tool = (df["tool"].fillna("").astype(str).str.upper() + " " + df.get("tool_version", "").fillna("").astype(str)
                + " " + df.get("estimate", "mean").fillna("mean").astype(str))
        df.loc[imp, "mpi"] = (label.where(label != "", "MPI ?") + " (" + tool + ")")[imp]
    return df


def _candidates(df: pd.DataFrame) -> list[str]:
    """Columns that can tell configurations apart, most telling first."""
    cols = list(df.columns)
    factors = [c for c in cols if c.startswith("factor_")]
    envs = sorted(c for c in cols if c.startswith("env_"))
    opts = sorted(c for c in cols if c.startswith("opt_") and c not in _NOT_A_FACTOR)
    fixed = [c for c in ("benchmark", "mpi", "ranks", "hosts", "launcher", "oversubscribed") if c in cols]
    return [*fixed[:1], *factors, *fixed[1:], *envs, *opts]


def differing(df: pd.DataFrame, exclude: Sequence[str] = (), first: Sequence[str] = ()) -> list[str]:
    """The candidate columns (`first`, then the run's factors) whose value differs between rows;
    a column that splits the rows exactly as one already chosen (mpi_version beside mpi,
    opt_nblock beside factor_nblock) is left out."""
    chosen: list[str] = []
    codes: list[pd.Series] = []
    for col in [*first, *_candidates(df)]:
        if col in exclude or col in chosen:
            continue
        key = df[col].astype(str)
        if key.nunique() < 2:
            continue
        code = pd.Series(pd.factorize(key)[0], index=df.index)
        if any(_same_partition(code, other) for other in codes):
            continue
        chosen.append(col)
        codes.append(code)
    return chosen


def _same_partition(a: pd.Series, b: pd.Series) -> bool:
    pairs = pd.DataFrame({"a": a, "b": b}).drop_duplicates()
    return pairs["a"].is_unique and pairs["b"].is_unique


def factor_label(col: str, value) -> str:
    """One factor's value as a reader wants it in a legend; a derived column (a plot's own
    grouping, such as the ring algorithm) is its value alone."""
    if col == "ranks":
        return f"{int(value)} rank{'s' if int(value) != 1 else ''}"
    if col == "hosts":
        return f"{int(value)} host(s)"
    if col == "run_id":
        return f"run {value}"
    if col.startswith(("factor_", "env_", "opt_")):
        return f"{col.split('_', 1)[1]}={value}"
    return str(value)


def legend_keys(df: pd.DataFrame, exclude: Sequence[str] = (), first: Sequence[str] = (),
                within: Sequence[str] = ("size",)) -> list[str]:
    """The columns a legend names: those that differ, and run_id too when repeats of one
    configuration would otherwise put two runs on one point of a line (`within`: the columns
    that place a point: x, panel). Empty when there is one configuration."""
    df = with_mpi(df) if "mpi" not in df.columns else df
    cols = differing(df, exclude, first)
    by = [df[c].astype(str) for c in [*cols, *within]] or [df["mpi"]]
    if df.groupby(by)["run_id"].nunique().max() > 1:
        cols = [*cols, "run_id"]
    return cols


def series(df: pd.DataFrame, keys: Sequence[str]) -> Iterator[tuple[str, pd.DataFrame]]:
    """(legend label, rows sorted by size) per configuration; `keys` from legend_keys, once for
    a figure, so that its axes share their labels."""
    df = with_mpi(df) if "mpi" not in df.columns else df
    keys = list(keys)
    if not keys:
        yield str(df["mpi"].iloc[0]), df.sort_values("size")
        return
    try:
        groups = list(df.groupby(keys, sort=True, dropna=False))
    except TypeError:  # mixed types in a column cannot be ordered
        groups = list(df.groupby(keys, sort=False, dropna=False))
    for _, rows in groups:
        first = rows.iloc[0]
        yield ", ".join(factor_label(c, first[c]) for c in keys), rows.sort_values("size")
