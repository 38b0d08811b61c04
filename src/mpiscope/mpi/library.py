"""One MPI library: where its compiler wrapper and launcher are, and what it is."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
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

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("mpicc", "launcher", "prefix"):
            d[k] = str(d[k]) if d[k] is not None else None
        return d

    @classmethod
    def from_json(cls, d: dict) -> "MpiLibrary":
        d = dict(d)
        for k in ("mpicc", "launcher", "prefix"):
            if d.get(k) is not None:
                d[k] = Path(d[k])
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})
