"""One MPI library: where its compiler wrapper and launcher are, and what it is (to and from
JSON with typed.dump and typed.load)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class MpiLibrary:
    name: str
    mpicc: Path
    launcher: Path
    origin: str  # embedded | path | system | managed
    prefix: Path | None = None
    vendor: str = "unknown"
    version: str = ""
    library_version: str = ""
    mpi_version: str = ""
    extra: dict = field(default_factory=dict)
