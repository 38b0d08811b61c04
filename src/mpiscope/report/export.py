"""The exporters of the tidy table (results.table.tidy): CSV, JSON, Parquet, Markdown, to a file or stdout."""
from __future__ import annotations

import io
from dataclasses import dataclass

import pandas as pd

from mpiscope.util.output import write_output
from mpiscope.util.errors import UsageError
from mpiscope.results.table import OBJECT_COLUMNS
from mpiscope.report.numbers import FORMATS
from mpiscope.report.modes import worded
from mpiscope.results.view import Results


def _markdown(df: pd.DataFrame) -> str:
    def cell(v) -> str:
        return "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v).replace("|", "\\|")
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def render(df: pd.DataFrame, fmt: str) -> bytes:
    """The table's figures in `fmt`; the typed objects behind the rows stay behind."""
    df = worded(df.drop(columns=[c for c in OBJECT_COLUMNS if c in df]))
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


@dataclass(frozen=True)
class Export:
    """The export reporter (`mpiscope export`): the results' table in `fmt`, a row per point over
    its launches, or with `per_launch` a row per point and launch."""
    fmt: str
    per_launch: bool = False

    def render(self, results: Results) -> bytes:
        return render(results.table(self.per_launch), self.fmt)


def write(data: bytes, output: str) -> None:
    """`-` is stdout, a FIFO or a device is written into, anything else is a file written whole."""
    try:
        write_output(output, data)
    except OSError as e:
        raise UsageError(f"cannot write {output}: {e.strerror or e}: give a file in an existing, "
                         f"writable directory, or -o - for standard output") from e
