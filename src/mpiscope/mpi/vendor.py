"""Vendor and version from MPI_Get_library_version's string, as mpi4py's pympivendor.h does."""
from __future__ import annotations

import re

# Order matters: derived MPIs (Intel, MVAPICH, Cray) mention MPICH too.
_PATTERNS: list[tuple[str, str]] = [
    ("Intel MPI", r"Intel\(R\) MPI Library\s+(?:for \w+\*? OS,\s*)?(?:Version\s+)?([\d.]+)"),
    ("MVAPICH", r"MVAPICH2?(?:-\w+)? Version\s*:?\s*([\d.]+\w*)"),
    ("Cray MPICH", r"CRAY MPICH version\s+([\d.]+)"),
    ("Spectrum MPI", r"Spectrum MPI\s+([\d.]+)"),
    ("Microsoft MPI", r"Microsoft MPI\s*([\d.]*)"),
    ("MPICH", r"MPICH Version:\s*([\d.]+\w*)"),
    ("Open MPI", r"Open MPI v([\d.]+\w*)"),
    ("SMPI", r"SMPI Version\s+([\d.]+\d)"),  # SimGrid's simulated MPI
]


def parse_library_version(text: str) -> tuple[str, str]:
    """(vendor, version) or ("unknown", "") when the string is not recognised."""
    for vendor, pattern in _PATTERNS:
        m = re.search(pattern, text, re.IGNORECASE)
        if m:
            return vendor, m.group(1)
    return "unknown", ""

