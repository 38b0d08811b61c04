"""Compiling the engine with one MPI's own mpicc, cached by sources + compiler.

The cache key hashes every engine source file, the mpicc path and what the
wrapper says it runs (`-show`), so a changed source or a reinstalled MPI
rebuilds and nothing else does.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from mpiscope.util import paths
from mpiscope.util.atomic import write_atomic
from mpiscope.util.errors import MpiscopeError

ENGINE = "mpiscope-engine"

# What make can take in a target name: it splits targets at blanks, reads ':', '%', '#' and '='
# as syntax, and its recipes hand `$@` to the shell unquoted.
_TARGET_SAFE = re.compile(r"[\w./+,@~-]+")


def make_word(value: str) -> str:
    """`value` as one shell word that make leaves alone: quoted for the recipe's shell, each `$`
    doubled so make expands none (a `$(shell ...)` in a prefix would otherwise run)."""
    if "\n" in value or "\r" in value:
        raise MpiscopeError(f"cannot pass {value!r} to make: it holds a line break; rename it")
    return shlex.quote(value).replace("$", "$$")


def build_dir(builds: Path) -> Path:
    """`builds` when make can name targets in it, else a one-line error."""
    if not _TARGET_SAFE.fullmatch(str(builds)):
        var, value = paths.home_source()
        raise MpiscopeError(f"make cannot build into {str(builds)!r} (only letters, digits and ._+,@~/- are safe "
                            f"in a make target): set MPISCOPE_HOME to such a directory"
                            f"{'' if var == 'MPISCOPE_HOME' else f' ({var}={value!r} placed it)'}")
    return builds


def wrapper_show(mpicc: Path) -> str:
    """The compile line the wrapper hides: MPICH says it with -show, Open MPI with -showme. Asked
    in a directory of its own: a wrapper that passes a flag it does not know on to the compiler
    may link an a.out where it runs (SimGrid's smpicc does, for -v), never where mpiscope started."""
    program = os.path.abspath(mpicc) if os.sep in str(mpicc) else str(mpicc)
    with tempfile.TemporaryDirectory(prefix="mpiscope-show.") as aside:
        for flag in ("-show", "-showme"):
            try:
                r = subprocess.run([program, flag], capture_output=True, text=True, timeout=60, cwd=aside)
            except OSError as e:
                raise MpiscopeError(f"cannot run {mpicc}: {e}: check the MPI installation") from e
            if r.returncode == 0 and r.stdout.strip():
                return r.stdout.strip()
    return ""


def source_files(src: Path) -> list[Path]:
    return sorted(
        p for p in src.rglob("*")
        if p.is_file() and "build" not in p.relative_to(src).parts and p.suffix in (".c", ".h", "")
    )


def cache_key(src: Path, mpicc: Path) -> str:
    h = hashlib.sha256()
    for f in source_files(src):
        h.update(str(f.relative_to(src)).encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(str(mpicc).encode() + b"\0" + wrapper_show(mpicc).encode())
    return h.hexdigest()[:16]


def build_engine(mpicc: Path, src: Path | None = None) -> Path:
    """Path of an engine binary built with `mpicc`, building it only on a cache miss."""
    src = src or paths.engine_sources()
    builds = build_dir(Path(os.path.abspath(paths.home())) / "builds")  # make runs in src: BUILD is absolute
    final = builds / cache_key(src, mpicc)
    binary = final / ENGINE
    if binary.is_file():
        return binary
    builds.mkdir(parents=True, exist_ok=True)
    # Build aside and rename, so a concurrent or interrupted build never leaves a half cache entry.
    tmp = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=builds))
    cmd = ["make", f"-j{os.cpu_count() or 1}", "-C", str(src), f"MPICC={make_word(str(mpicc))}", f"BUILD={tmp}"]
    try:
        r = _make(cmd)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise MpiscopeError(f"cannot run make ({e}): install make and a C compiler") from e
    except BaseException:  # Ctrl-C or SIGTERM: no half build is left behind
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if r.returncode != 0 or not (tmp / ENGINE).is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        out = (r.stdout + r.stderr).strip()
        if r.returncode == 0:
            out += f"\nmake left no {ENGINE} in {tmp}"
        raise MpiscopeError(
            f"building the engine failed (exit {r.returncode}):\n  $ {' '.join(cmd)}\n{out}\n"
            f"fix the compiler error above, or pick another MPI with --mpi"
        )
    shutil.rmtree(tmp / "obj", ignore_errors=True)
    try:
        write_atomic(tmp / "build.json", json.dumps({"mpicc": str(mpicc), "command": cmd, "src": str(src)}, indent=1))
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise MpiscopeError(f"cannot write the engine build into {builds}: {e.strerror or e}; free some space "
                            f"or set MPISCOPE_HOME to a writable directory") from e
    try:
        os.rename(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another process won the race; its build is as good
    return binary


def _make(cmd: list[str]) -> subprocess.CompletedProcess:
    """make and every compiler it started, in a process group of their own that an interrupt
    ends whole (a compiler left running would write into the folder being removed)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate()
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def standalone(engine: Path) -> list[str]:
    """argv that starts the engine alone, for what it answers without ranks (--mpi-info, --list,
    --plan): the binary itself, or for SMPI, whose engine is a library that smpirun loads,
    smpirun with one rank on a one-node simulated platform."""
    try:
        mpicc = Path(json.loads((engine.parent / "build.json").read_text())["mpicc"])
    except (OSError, ValueError, KeyError, TypeError):
        return [str(engine)]
    if mpicc.name != "smpicc":
        return [str(engine)]
    from mpiscope.launchers.base import Job
    from mpiscope.launchers.smpirun import Smpirun
    return Smpirun(mpicc.parent / "smpirun").command(Job(program=[str(engine)], ranks=1)).argv


def mpi_info(engine: Path) -> dict:
    """The engine's `--mpi-info` JSON (library version string), cached beside the binary."""
    cached = engine.parent / "mpi-info.json"
    if cached.is_file():
        try:
            found = json.loads(cached.read_text())
            if isinstance(found, dict):
                return found
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            pass  # a damaged cache is asked again
    try:
        r = subprocess.run([*standalone(engine), "--mpi-info"], capture_output=True, text=True, timeout=60)
        info = json.loads(r.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        raise MpiscopeError(f"{engine} --mpi-info did not answer with JSON ({e}): rebuild it or check the MPI") from e
    try:
        write_atomic(cached, json.dumps(info))
    except OSError:
        pass
    return info
