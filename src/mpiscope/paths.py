"""Where mpiscope keeps its state, its runs, and where the engine sources are."""
from __future__ import annotations

import os
from pathlib import Path

from mpiscope.errors import MpiscopeError


def home() -> Path:
    """Registered MPIs, managed MPI venvs and engine builds live here."""
    env = os.environ.get("MPISCOPE_HOME")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "mpiscope"


def runs_dir(explicit: str | None = None) -> Path:
    """--runs-dir wins over MPISCOPE_RUNS, which wins over ./mpiscope-runs."""
    return Path(explicit or os.environ.get("MPISCOPE_RUNS") or "mpiscope-runs")


def engine_sources() -> Path:
    """The engine's C sources: shipped in the wheel, or the checkout's engine/."""
    env = os.environ.get("MPISCOPE_ENGINE_SRC")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent
    candidates += [here / "_engine", here.parents[1] / "engine"]
    for c in candidates:
        if (c / "Makefile").is_file():
            return c
    raise MpiscopeError(
        "cannot find the engine sources (looked in "
        + ", ".join(str(c) for c in candidates)
        + "): reinstall mpiscope, or set MPISCOPE_ENGINE_SRC to the engine/ directory"
    )
