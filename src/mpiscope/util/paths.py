"""Where mpiscope keeps its state, its runs, and where the engine sources are."""
from __future__ import annotations

import errno
import os
from pathlib import Path

from mpiscope.util.errors import MpiscopeError


def home() -> Path:
    """Registered MPIs, managed MPI venvs and engine builds live here."""
    env = os.environ.get("MPISCOPE_HOME")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "mpiscope"


def home_source() -> tuple[str, str]:
    """The environment variable that placed `home()` and its value (HOME when none is set)."""
    for var in ("MPISCOPE_HOME", "XDG_DATA_HOME"):
        if os.environ.get(var):
            return var, os.environ[var]
    return "HOME", str(Path.home())


def home_fix(path: str | os.PathLike | None) -> str | None:
    """When `path` (where an OSError happened) lies in mpiscope's home: which variable to point
    elsewhere (a part of the way there is a file, or the home cannot be written). None otherwise."""
    if path is None:
        return None
    where = Path(os.fsdecode(path))
    if where != home() and home() not in where.parents:
        return None
    var, value = home_source()
    other = " (or set MPISCOPE_HOME)" if var != "MPISCOPE_HOME" else ""
    for part in [*reversed(where.parents), where]:
        if part.exists() and not part.is_dir():
            return f"{part} is a file, not a directory, so {var}={value} cannot hold mpiscope's home: point " \
                   f"{var} at a directory{other}"
    # read-only, or not this user's: the runs directory has nothing to do with it
    return f"mpiscope's home {home()} lies there ({var}={value}): point {var} at a directory you can write{other}"


def is_link_loop(path: Path) -> bool:
    """A symbolic link that leads back to itself (directly or through others)."""
    if not path.is_symlink():
        return False
    try:
        path.resolve(strict=True)
    except (RuntimeError, OSError) as e:  # RuntimeError: Python before 3.13 says "Symlink loop"
        return isinstance(e, RuntimeError) or getattr(e, "errno", None) == errno.ELOOP
    return False


def runs_dir(explicit: str | None = None) -> Path:
    """--runs-dir wins over MPISCOPE_RUNS, which wins over ./mpiscope-runs."""
    return Path(explicit or os.environ.get("MPISCOPE_RUNS") or "mpiscope-runs")


def engine_sources() -> Path:
    """The engine's C sources: shipped in the wheel, or the checkout's engine/."""
    env = os.environ.get("MPISCOPE_ENGINE_SRC")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parents[1]  # the package, above util/
    candidates += [here / "_engine", here.parents[1] / "engine"]
    for c in candidates:
        if (c / "Makefile").is_file():
            return c
    raise MpiscopeError(
        "cannot find the engine sources (looked in "
        + ", ".join(str(c) for c in candidates)
        + "): reinstall mpiscope, or set MPISCOPE_ENGINE_SRC to the engine/ directory"
    )
