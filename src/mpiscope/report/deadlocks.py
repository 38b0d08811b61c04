"""The ring study's deadlock table in words: each series' result from the sizes
`analysis.ring.deadlock_table` finds (where it deadlocked, timed out or got to)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import pandas as pd

from mpiscope.analysis import ring
from mpiscope.records import Record


def result(row: Mapping[str, Any]) -> str:
    """'deadlock at N bytes', 'no deadlock up to N bytes' or, for an MPI-compliant algorithm,
    'timed out at N bytes (...)'; time-outs below the largest size completed are named as slow."""
    slow = f" (timed out at {', '.join(map(str, row['slow']))} bytes, not a deadlock)" if row["slow"] else ""
    if row["deadlock"] is None or pd.isna(row["deadlock"]):
        return f"no deadlock up to {int(row['largest_ok'])} bytes{slow}"
    at = int(row["deadlock"])  # a float in a frame where some series have none
    if row["algorithm"] == 1:
        return f"deadlock at {at} bytes{slow}"
    return f"timed out at {at} bytes (MPI-compliant: not a deadlock){slow}"  # it cannot deadlock


def deadlock_table(records: Iterable[Record]) -> pd.DataFrame:
    """`analysis.ring.deadlock_table` with each series' `result` in words."""
    table = ring.deadlock_table(records)
    return table.assign(result=[result(row) for row in table.to_dict("records")])
