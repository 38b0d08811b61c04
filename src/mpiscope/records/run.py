"""What the layers above read of a run (store.Run): its id, its run.json and its records. The
results layer and the tidy table take anything of this shape, so they need no store."""
from __future__ import annotations

from typing import Any, Mapping, Protocol

from mpiscope.records.reader import RecordFile


class MetaView(Protocol):
    """What is read of a run's run.json (store.RunMeta)."""
    status: str
    launcher_command: list[str]
    factors: Mapping[str, Any]
    sweep: Any
    mpi: Any
    extra: Mapping[str, Any]


class RunView(Protocol):
    """What is read of a run (store.Run)."""
    @property
    def id(self) -> str: ...
    def meta(self) -> MetaView: ...
    def records(self) -> RecordFile: ...
