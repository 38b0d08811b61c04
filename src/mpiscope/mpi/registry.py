"""Which MPI libraries exist: the embedded default, the one on PATH, and registered ones.

Registered libraries (system prefixes and managed wheels) are kept in
$MPISCOPE_HOME/mpis.json; vendor and version come from the engine's
`--mpi-info`, so every library listed is one the engine can be built with.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from difflib import get_close_matches
from pathlib import Path

from mpiscope.util import bounded, paths
from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.mpi.build import build_engine, mpi_info
from mpiscope.mpi.library import MpiLibrary
from mpiscope.mpi.vendor import parse_library_version
from mpiscope.util.typed import dump, load

EMBEDDED = "embedded"
ON_PATH = "path"
LAUNCHER_NAMES = ("mpiexec", "mpirun")
MAX_REGISTRY_BYTES = 16 << 20  # a few hundred bytes per registered MPI


def _state_file() -> Path:
    return paths.home() / "mpis.json"


def load_registered() -> dict[str, MpiLibrary]:
    f = _state_file()
    if not os.path.lexists(f):  # a FIFO or a directory in its place is said, not taken for no MPI
        return {}
    try:
        data = bounded.read_json(f, MAX_REGISTRY_BYTES, "mpis.json")
        return {name: load(MpiLibrary, d) for name, d in data.items()}
    except (OSError, ValueError, AttributeError) as e:  # ShapeError and JSONDecodeError are ValueErrors
        why = bounded.why(e) if isinstance(e, (OSError, ValueError)) else bounded.excerpt(str(e), 200)
        raise MpiscopeError(f"{f} cannot be read ({why}): fix or delete it, then `mpiscope mpi add` again") from e


def save_registered(libs: dict[str, MpiLibrary]) -> None:
    f = _state_file()
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_suffix(".tmp")
    tmp.write_text(json.dumps({n: dump(lib) for n, lib in libs.items()}, indent=1))
    os.replace(tmp, f)  # atomic: the state file is never half-written


def launcher_beside(bindir: Path) -> Path | None:
    """The launcher that belongs to an mpicc is the one in the same bin/ directory."""
    for name in LAUNCHER_NAMES:
        p = bindir / name
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def from_prefix(prefix: Path, name: str, origin: str) -> MpiLibrary:
    bindir = prefix / "bin"
    mpicc = bindir / "mpicc"
    if not mpicc.is_file():
        raise UsageError(f"{mpicc} does not exist: PREFIX must be an MPI install holding bin/mpicc")
    launcher = launcher_beside(bindir)
    if launcher is None:
        raise UsageError(f"no mpiexec or mpirun in {bindir}: PREFIX must be an MPI install with a launcher")
    return MpiLibrary(name=name, mpicc=mpicc, launcher=launcher, origin=origin, prefix=prefix)


def embedded() -> MpiLibrary | None:
    """The `mpich` wheel puts its wrappers beside this Python's scripts (or the user's, after --user)."""
    candidates = [sysconfig.get_path("scripts"), str(Path(sys.prefix) / "bin")]
    try:
        candidates.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:
        pass
    for d in map(Path, candidates):
        if (d / "mpicc").is_file() and launcher_beside(d) is not None:
            return from_prefix(d.parent, EMBEDDED, EMBEDDED)
    return None


def on_path(skip: list[MpiLibrary]) -> MpiLibrary | None:
    found = shutil.which("mpicc")
    if not found:
        return None
    mpicc = Path(found)
    if any(lib.mpicc.resolve() == mpicc.resolve() for lib in skip):
        return None  # an activated venv puts the embedded MPI on PATH: same library
    launcher = launcher_beside(mpicc.parent) or next(
        (Path(p) for p in map(shutil.which, LAUNCHER_NAMES) if p), None)
    if launcher is None:
        return None
    return MpiLibrary(name=ON_PATH, mpicc=mpicc, launcher=launcher, origin=ON_PATH, prefix=mpicc.parent.parent)


def find_all() -> list[MpiLibrary]:
    libs: list[MpiLibrary] = []
    emb = embedded()
    if emb:
        libs.append(emb)
    p = on_path(libs)
    if p:
        libs.append(p)
    libs.extend(load_registered().values())
    return libs


SMPI_COMPILER, SMPI_LAUNCHER = "smpicc", "smpirun"


def smpi() -> MpiLibrary:
    """SimGrid's SMPI from PATH (`mpiscope mpi add smpi`): smpicc builds, smpirun simulates."""
    found = [shutil.which(n) for n in (SMPI_COMPILER, SMPI_LAUNCHER)]
    if not all(found):
        raise UsageError("smpicc and smpirun are not on PATH: install SimGrid (Debian: apt-get install "
                         "libsimgrid-dev), or add its bin directory to PATH")
    mpicc, launcher = (Path(p) for p in found if p)
    return MpiLibrary(name="smpi", mpicc=mpicc, launcher=launcher, origin="system", prefix=mpicc.parent.parent)


def identify(lib: MpiLibrary) -> MpiLibrary:
    """Fill vendor and version by building the engine (cached) and asking it."""
    info = mpi_info(build_engine(lib.mpicc))
    lib.library_version = info.get("mpi_library_version", "")
    lib.mpi_version = info.get("mpi_version", "")
    lib.vendor, lib.version = parse_library_version(lib.library_version)
    return lib


def default_name(libs: list[MpiLibrary]) -> str:
    if not libs:
        raise MpiscopeError("no MPI library found: reinstall mpiscope (it brings the mpich wheel) "
                            "or register one with `mpiscope mpi add PREFIX`")
    return libs[0].name


def _plain(vendor: str) -> str:
    """A vendor as a user types it: 'Open MPI' -> openmpi, 'MPICH' -> mpich."""
    return "".join(c for c in vendor.lower() if c.isalnum())


def _of_vendor(name: str, libs: list[MpiLibrary]) -> list[MpiLibrary]:
    """The libraries whose vendor `name` names (`--mpi mpich`, `--mpi openmpi`), identified; one
    whose engine cannot be built is no candidate."""
    out = []
    for lib in libs:
        if lib.vendor == "unknown":
            try:
                lib = identify(lib)
            except MpiscopeError:
                continue
        if _plain(lib.vendor) == _plain(name):
            out.append(lib)
    return out


def find(name: str | None) -> MpiLibrary:
    """The library called `name` (default: the embedded one), identified."""
    if name is not None and not name.strip():  # `--mpi ''` is a slip, not a request for the default
        raise UsageError("the MPI's name is empty: give one of `mpiscope mpi list`, or leave --mpi out for "
                         "the default")
    libs = find_all()
    name = name or default_name(libs)
    for lib in libs:
        if lib.name == name:
            return identify(lib)
    of_vendor = _of_vendor(name, libs)
    if len(of_vendor) == 1:
        return of_vendor[0]
    if of_vendor:
        which = ", ".join(lib.name for lib in of_vendor)
        raise UsageError(f"'{name}' is the vendor of {len(of_vendor)} libraries ({which}): give one of their "
                         f"names (`mpiscope mpi list` shows them)")
    names = [lib.name for lib in libs]
    close = get_close_matches(name, names + [_plain(lib.vendor) for lib in libs if lib.vendor != "unknown"], n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise UsageError(f"unknown MPI '{name}': {hint}known: {', '.join(names) or 'none'} "
                     f"(`mpiscope mpi list` shows them, `mpiscope mpi add` registers one)")
