"""What a simulated run checks before its run directory exists, so that bad input is one line
and nothing is half-written: room in this host's memory for its ranks, no alltoall that SimGrid's
mpich selector aborts on, and its platform and --cfg options as SimGrid itself reads them (one
rank, the engine's --mpi-info: a fraction of a second)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Sequence

from mpiscope.launchers import Job, launcher_for
from mpiscope.launchers.smpirun import simgrid_error
from mpiscope.mpi.library import MpiLibrary
from mpiscope.plan.engine import Part
from mpiscope.util.errors import UsageError

# What one simulated rank holds in this host's memory beyond the payloads (which SMPI shares):
# a barrier's resident set under SimGrid 3.32 was 63 MB at 64 ranks, 163 MB at 256, 687 MB at
# 1024 and 3.17 GB at 4096 (`/usr/bin/time -f %M`), 650-780 KiB a rank; counted with a margin.
RANK_BYTES = 1 << 20
CHECK_LIMIT_S = 120.0
# SimGrid 3.32's mpich selector hands alltoall blocks of this many bytes and more to its `pair`
# algorithm when the rank count is odd (it tests p % 2 where MPICH's rule, as its own comment says,
# is a power of two), and `pair` aborts the whole simulation at any rank count that is not a power of
# two ("alltoall pair algorithm can't be used with non power of two number of processes"); even
# counts get `ring`, which MPICH itself uses for long blocks at a count that is not a power of two.
ALLTOALL_PAIR_BYTES = 32768


def available_bytes() -> int | None:
    """This host's available memory (/proc/meminfo's MemAvailable), None where unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_memory(ranks: int, available: int | None = None) -> None:
    """UsageError when `ranks` simulated ranks would not fit in this host's available memory."""
    available = available_bytes() if available is None else available
    if available is not None and ranks * RANK_BYTES > available:
        most = available // RANK_BYTES
        raise UsageError(f"-n {ranks}: {ranks} simulated ranks need about {ranks * RANK_BYTES / 2**30:.1f} GiB of "
                         f"this host's memory ({RANK_BYTES >> 10} KiB a rank), {available / 2**30:.1f} GiB is "
                         f"available: give -n {most} or fewer, or simulate on a host with more memory")


def check_platform(lib: MpiLibrary, engine: Path, part: Part, hostfile_given: bool = True) -> None:
    """UsageError naming SimGrid's reason when it refuses `part`'s platform, hostfile or --cfg
    (`hostfile_given` False: the hostfile is one the caller wrote, not named in the message)."""
    job = Job([str(engine), "--mpi-info"], 1, dict(part.env), list(part.launcher_args),
              **part.placement.job_fields())
    launch = launcher_for(lib, job.launcher).command(job)
    given = [f"--platform {part.placement.platform}" if part.placement.platform else "",
             f"--hostfile {part.placement.hostfile}" if part.placement.hostfile and hostfile_given else "",
             f"--launcher-args '{' '.join(part.launcher_args)}'" if part.launcher_args else ""]
    what = ", ".join(filter(None, given)) or "the default platform"
    try:
        done = subprocess.run(launch.argv, capture_output=True, text=True, timeout=CHECK_LIMIT_S,
                              env={**os.environ, **launch.env}, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise UsageError(f"SimGrid did not read {what} within {CHECK_LIMIT_S:.0f} s: check the platform "
                         f"file") from None
    except OSError as e:
        raise UsageError(f"cannot start {launch.argv[0]}: {e.strerror or e}: check SimGrid's install") from None
    if done.returncode != 0 or "mpi_library_version" not in done.stdout:
        raise UsageError(f"SimGrid refuses {what}: {simgrid_error(done.stderr)}")


def alltoall_aborts(ranks: int, size: int, options: Sequence[str]) -> bool:
    """Would SimGrid's mpich selector abort an alltoall of `size`-byte blocks at `ranks` under the
    smpirun options (`--cfg=KEY:VALUE` or `KEY:VALUE` each)? Not when they name the alltoall
    algorithm or another selector."""
    given = dict(o.removeprefix("--cfg=").split(":", 1) for o in options if ":" in o)
    return (ranks >= 3 and ranks % 2 == 1 and size >= ALLTOALL_PAIR_BYTES and "smpi/alltoall" not in given
            and given.get("smpi/coll-selector", "mpich") == "mpich")


def check_alltoall(engine: Path, part: Part) -> None:
    """UsageError when `part` asks SimGrid for an alltoall its mpich selector aborts on."""
    if "alltoall" not in part.plan.benchmarks or part.plan.ranks % 2 == 0:
        return
    from mpiscope.plan.engine import engine_plan
    from mpiscope.util.units import human_size
    bad = [e.size for e in part.entries(engine_plan(engine, part.plan))
           if e.benchmark == "alltoall" and e.skip is None and alltoall_aborts(e.ranks, e.size, part.launcher_args)]
    if bad:
        raise UsageError(f"-n {part.plan.ranks}: SimGrid 3.32's mpich selector aborts alltoall blocks of "
                         f"{human_size(ALLTOALL_PAIR_BYTES)} and more at an odd rank count (its pair algorithm takes "
                         f"powers of two only; {human_size(min(bad))} asked): give an even -n, sizes below "
                         f"{human_size(ALLTOALL_PAIR_BYTES)}, or --launcher-args=--cfg=smpi/alltoall:ring (MPICH's own "
                         f"algorithm there)")


def check_simulation(lib: MpiLibrary, engine: Path, parts: Sequence[Part]) -> None:
    """The checks, the platform's once per distinct platform, hostfile and options of `parts`."""
    check_memory(max(p.plan.ranks for p in parts))
    for part in parts:
        check_alltoall(engine, part)
    seen = set()
    for part in parts:
        key = (part.placement.platform, part.placement.hostfile, tuple(part.launcher_args),
               tuple(sorted(part.env.items())))
        if key not in seen:
            seen.add(key)
            check_platform(lib, engine, part)
