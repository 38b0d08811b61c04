"""SimGrid's `smpirun`: every rank a simulated process on a simulated platform, all in one
host process. `-np N -platform XML -hostfile FILE`, SimGrid options as `--cfg=KEY:VALUE`
(passed through from --launcher-args), env vars inherited (the ranks are this process's)."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from mpiscope.util import paths
from mpiscope.util.errors import UsageError
from mpiscope.launchers.base import Job, Launch, Launcher
from mpiscope.launchers.platform import parse, write

DEFAULT_PLATFORM = "cluster"
# The figures are the network model's alone (computation between MPI calls takes no simulated
# time), collectives choose their algorithm as MPICH does (SimGrid's own allgather and alltoall
# grow as ranks^3 in host time), and SimGrid's start-up chatter is off; docs/simulation.md, "What
# is simulated", has the measurements. A given --cfg of the same key wins.
DEFAULT_CFG = ("--cfg=smpi/simulate-computation:no", "--cfg=smpi/coll-selector:mpich", "--log=root.thresh:warning")
# Under the mpich selector SimGrid's bcast, reduce and allreduce are two-level (SMP-aware) and
# their first call finds the nodes by ranks^2 messages; with one rank a node the two levels are
# one, so the algorithms they come down to are named and the discovery never runs. Reduce is
# MPICH's rule in the selector, which no one setting names: binomial here. A given
# smpi/<collective> wins, and a given selector drops all three.
SMP_FREE = ("--cfg=smpi/allreduce:rdb", "--cfg=smpi/bcast:binomial_tree", "--cfg=smpi/reduce:binomial")
# How SMPI shares the engine's payloads: "local" maps one file a rank, lazily, where SMPI's default
# "global" needs a mapping per block and runs past the kernel's vm.max_map_count at 1024 ranks; the
# simulated times are the same (docs/simulation.md, "Shared payloads and the kernel's mapping limit").
SHARED_KEY = "--cfg=smpi/shared-malloc"
SHARED_MODE = "local"
# The block of the global mode, when a user names it: larger blocks need fewer mappings, but each
# is populated up front, so a small point maps a whole block a rank (docs/simulation.md).
BLOCK_KEY = "--cfg=smpi/shared-malloc-blocksize"
SHARED_BLOCK = 16 << 20


# SimGrid 3.32's defaults of SMPI's piecewise factors (the same breakpoints for both) and of the
# size from which a send waits for its receiver: where a simulated time's slope or offset changes
# without any protocol of a real MPI (docs/simulation.md, "How a simulated run differs").
FACTOR_KEYS = ("smpi/bw-factor", "smpi/lat-factor")
DEFAULT_FACTORS = "65472:0;15424:0;9376:0;5776:0;3484:0;1426:0;732:0;257:0;0:0"
DETACHED_KEY, DEFAULT_DETACHED = "smpi/send-is-detached-thresh", 65536


def breakpoints(cfg: list[str] | tuple[str, ...]) -> dict[int, str]:
    """The sizes (bytes) at which SMPI changes a simulated message's cost under `cfg` (a run's
    --cfg options), each with the settings that change there: the factors' thresholds above 0
    and the detached-send threshold."""
    given = {a.split("=", 1)[1].split(":", 1)[0]: a.split(":", 1)[1] for a in cfg
             if a.startswith("--cfg=") and ":" in a}
    out: dict[int, list[str]] = {}
    for key in FACTOR_KEYS:
        for piece in given.get(key, DEFAULT_FACTORS).split(";"):
            size = piece.split(":", 1)[0].strip()
            if size.isdigit() and int(size) > 0:
                out.setdefault(int(size), []).append(key)
    detached = given.get(DETACHED_KEY, str(DEFAULT_DETACHED))
    if detached.isdigit():
        out.setdefault(int(detached), []).append(DETACHED_KEY)
    return {size: " and ".join(keys) for size, keys in sorted(out.items())}


# SimGrid's own error line: "[0.000000] ./src/xbt/exception.cpp:95: [xbt_exception/ERROR] Parse error at ..."
_ERROR = re.compile(r"\[[\w./-]+/(?:ERROR|CRITICAL)\] (.*)")
_NOISE = ("Exiting now", "Aborted", "Execution failed", "Backtrace", "->", "[stdout]")


def simgrid_error(stderr: str) -> str:
    """SimGrid's own reason in its output, else its last line that says anything."""
    found = [m.group(1).strip() for m in _ERROR.finditer(stderr)]
    said = [f for f in found if not f.startswith(_NOISE)]
    if said:
        return said[0]
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.strip().startswith(_NOISE)]
    return lines[-1] if lines else "no output"


def platform_digest(xml: Path) -> str:
    """What identifies a platform's figures: a digest of its XML's bytes (a built-in platform's
    generated file, or the user's), so that a file is known by its content, not its path."""
    try:
        return hashlib.sha256(xml.read_bytes()).hexdigest()[:16]
    except OSError as e:
        raise UsageError(f"--platform {xml}: cannot read it: {e.strerror or e}") from None


def _given(args: list[str], key: str, default: str) -> str:
    return next((a.split(":", 1)[1] for a in args if a.startswith(key + ":")), default)


class Smpirun(Launcher):
    def command(self, job: Job, cores: int | None = None) -> Launch:
        if job.hosts or job.nodes or job.binding or job.ranks_per_node or job.mapping:
            raise UsageError("a simulated run places its ranks on the platform's nodes in order: leave out "
                             "--hosts, --nodes, --bind-to, --ranks-per-node and --map-by (the node count is "
                             "--platform's nodes=N), or give --hostfile")
        platform = parse(job.platform or DEFAULT_PLATFORM, job.ranks)
        key = hashlib.sha256(f"{platform.description}\0{job.ranks}".encode()).hexdigest()[:16]
        xml, hostfile = write(platform, job.ranks, paths.home() / "platforms" / key)
        if job.hostfile:
            hostfile = job.hostfile
        if hostfile is None:
            raise UsageError(f"--platform {platform.description}: give --hostfile naming its hosts, one a line")
        given = " ".join(job.extra_args)
        smp_free = () if "smpi/coll-selector" in given else SMP_FREE
        defaults = (*DEFAULT_CFG, *smp_free, f"{SHARED_KEY}:{SHARED_MODE}", f"{BLOCK_KEY}:{SHARED_BLOCK}")
        cfg = [a for a in defaults if a.split(":")[0] + ":" not in given]
        block = _given(job.extra_args, BLOCK_KEY, str(SHARED_BLOCK))
        shared = _given(job.extra_args, SHARED_KEY, SHARED_MODE)
        argv = [str(self.path), "-np", str(job.ranks), "-platform", str(xml), "-hostfile", str(hostfile),
                *cfg, *job.extra_args, *job.program]
        given_cfg = [a for a in (*cfg, *job.extra_args) if a.startswith("--cfg=")]
        env = {**job.env, "MPISCOPE_PLATFORM": platform.description, "MPISCOPE_SIM_BLOCK": block,
               "MPISCOPE_SIM_SHARED": shared, "MPISCOPE_SIM_DIGEST": platform_digest(xml),
               "MPISCOPE_SIM_CFG": "\n".join(given_cfg)}
        return Launch(argv=argv, env=env, oversubscribed=False)
