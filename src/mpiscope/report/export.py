"""One tidy table of results (one row per run x benchmark x size, every factor a column) and its exporters."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import pandas as pd

from mpiscope.errors import UsageError
from mpiscope.report.placement import placement_of
from mpiscope.store import Run

FORMATS = ("csv", "json", "parquet", "markdown")


def _factors(run: Run, ctx: dict) -> dict:
    """What is the same for every point of a run: library, ranks, placement, options, tuning env."""
    meta = run.meta()
    mpi = meta.get("mpi", {})
    row = {
        "run_id": run.id,
        "run_status": meta.get("status"),
        "launcher": Path((meta.get("launcher_command") or ["?"])[0]).name,
        "mpi_name": mpi.get("name"),
        "mpi_vendor": mpi.get("vendor"),
        "mpi_version": mpi.get("version"),
        "mpi_library_version": ctx.get("mpi_library_version", "").splitlines()[0] if ctx else None,
        "engine_version": ctx.get("engine_version"),
        "world_size": ctx.get("world_size"),
        "hosts": len(ctx.get("hosts", [])) or None,
        "cores_online": ctx.get("cores_online"),
        "oversubscribed": ctx.get("oversubscribed"),
        "start_time": ctx.get("start_time"),
    }
    for k, v in (ctx.get("options") or {}).items():
        if not isinstance(v, (list, dict)):
            row[f"opt_{k}"] = v
    for k, v in (ctx.get("env") or {}).items():
        row[f"env_{k}"] = v
    # what a sweep or study varied (run.json "factors"), e.g. factor_algorithm
    for k, v in (meta.get("factors") or {}).items():
        row[f"factor_{k}"] = v
    # which configuration and launch of a sweep produced the run (mpiscope sweep)
    if meta.get("sweep"):
        row["sweep_config"] = meta["sweep"].get("config")
        row["sweep_launch"] = meta["sweep"].get("launch")
    return row


# Nested objects of a point record whose fields become columns; lists (samples,
# pairs, participants) stay in records.jsonl.
_RENAME = {"time_us": "time_{}_us", "bw_MBps": "bw_{}_MBps", "busbw_MBps": "busbw_{}_MBps"}


def _flatten(point: dict) -> dict:
    """Every scalar of a point record as a column, nested ones as parent_child, so new engine
    fields reach the table without code here."""
    row = {}
    for k, v in point.items():
        if k == "type" or isinstance(v, list):
            continue
        if isinstance(v, dict):
            for sub, x in v.items():
                if not isinstance(x, (list, dict)):
                    row["samples" if (k, sub) == ("time_us", "n") else _RENAME.get(k, k + "_{}").format(sub)] = x
        else:
            row[k] = v
    return row


def tidy(runs: list[Run]) -> pd.DataFrame:
    rows = []
    for run in runs:
        recs = run.records()
        base = _factors(run, recs.context or {})
        # placement: intra-node / inter-node / mixed, from the pairs the engine classified
        rows += [{**base, **_flatten(p), "placement": placement_of(p)} for p in recs.of_type("point")]
    return pd.DataFrame(rows)


def _markdown(df: pd.DataFrame) -> str:
    def cell(v) -> str:
        return "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v).replace("|", "\\|")
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def render(df: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "csv":
        return df.to_csv(index=False).encode()
    if fmt == "json":
        return (df.to_json(orient="records", indent=1) + "\n").encode()
    if fmt == "markdown":
        return _markdown(df).encode()
    if fmt == "parquet":
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        return buf.getvalue()
    raise UsageError(f"unknown format '{fmt}': use one of {', '.join(FORMATS)}")


def write(df: pd.DataFrame, fmt: str, output: str) -> None:
    """`-` is stdout, anything else a file."""
    data = render(df, fmt)
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        try:
            Path(output).write_bytes(data)
        except OSError as e:
            raise UsageError(f"cannot write {output}: {e.strerror or e}: give a file in an existing, "
                             f"writable directory, or -o - for standard output") from e
