"""How every report writes a number: the one place for figures, percentages and table cells; and
the formats reports are written in, named apart from the code that writes them so that parsing
`mpiscope`'s options imports no pandas."""
from __future__ import annotations

import math
from typing import Any

FORMATS = ("csv", "json", "parquet", "markdown")       # `mpiscope export`
TABLE_FORMATS = ("terminal", "markdown", "csv")        # `mpiscope table`
LATENCY_UPTO = 256  # bytes: the side-by-side tables show the latency beside MB/s up to 32 words


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x: float | None, digits: int = 3, missing: str = "–", grouping: bool = True) -> str:
    """`digits` significant digits below 10**digits, whole numbers above (with thousands
    separators unless `grouping` is off); `missing` for None or NaN, ∞ for infinity."""
    if _missing(x):
        return missing
    if isinstance(x, float) and math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) < 10 ** digits:
        return f"{x:.{digits}g}"
    return f"{x:,.0f}" if grouping else f"{x:.0f}"


def pct(x: float | None, decimals: int = 0, missing: str = "–") -> str:
    """A fraction as a percentage: 0.123 -> '12%' (decimals 0) or '12.3%' (1)."""
    return missing if _missing(x) else f"{100 * x:.{decimals}f}%"


def cell(x: float) -> str:
    """A table cell: three significant digits or one decimal, whichever is more: 0.4, 5.3, 18,
    176.8, 1024."""
    if x >= 100:
        return f"{x:.1f}" if x < 1000 else f"{x:.0f}"
    return f"{x:.3g}" if x < 10 else f"{x:.1f}"
