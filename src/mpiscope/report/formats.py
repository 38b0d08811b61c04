"""The names of the output formats and table defaults, apart from the code that writes them, so
that parsing `mpiscope`'s options imports no pandas."""

FORMATS = ("csv", "json", "parquet", "markdown")       # `mpiscope export`
TABLE_FORMATS = ("terminal", "markdown", "csv")        # `mpiscope table`
LATENCY_UPTO = 256  # bytes: the newsletter shows the latency up to 32 words
