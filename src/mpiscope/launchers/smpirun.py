"""SimGrid's `smpirun`: every rank a simulated process on a simulated platform, all in one
host process. `-np N -platform XML -hostfile FILE`, SimGrid options as `--cfg=KEY:VALUE`
(passed through from --launcher-args), env vars inherited (the ranks are this process's)."""
from __future__ import annotations

import hashlib

from mpiscope.util import paths
from mpiscope.util.errors import UsageError
from mpiscope.launchers.base import Job, Launch, Launcher
from mpiscope.launchers.platform import parse, write

DEFAULT_PLATFORM = "cluster"
# Computation between MPI calls takes no simulated time: the figures are the network model's
# alone, the same on a loaded host as on an idle one (`--cfg=smpi/simulate-computation:yes`
# in --launcher-args times the host's computation instead). SimGrid's start-up chatter is off.
# Collectives choose their algorithm as MPICH does: SimGrid's own default allgather and alltoall
# post a message to every rank and wait on all of them (an allgather of 4 B at 64 ranks took
# 10 host seconds a point, and grows as ranks^3); `smpi/coll-selector` or `smpi/<coll>` given wins.
DEFAULT_CFG = ("--cfg=smpi/simulate-computation:no", "--cfg=smpi/coll-selector:mpich", "--log=root.thresh:warning")
# Under the mpich selector SimGrid runs its SMP-aware two-level bcast, reduce and allreduce on
# any communicator but a node's own, and their first call finds the nodes with two ring
# allgathers: ranks^2 messages (33 host seconds at 1024 ranks, about ranks^2.7; 4096 ranks wrote
# no point in 27 CPU minutes). With one rank a node the two levels are one: allreduce is
# recursive doubling and bcast a binomial tree at every size (the same simulated times,
# measured), so those are named, and the discovery never runs. Reduce on one rank a node is
# MPICH's rule (binomial below 2 KiB, scatter-gather above), which no one setting names: it
# is binomial here. A given smpi/<collective> wins, and a given selector (mpich too) drops all three.
SMP_FREE = ("--cfg=smpi/allreduce:rdb", "--cfg=smpi/bcast:binomial_tree", "--cfg=smpi/reduce:binomial")
# How SMPI shares the engine's payloads. Its default ("global") maps a block-sized file over an
# allocation block after block, a mapping each, populated up front: a 1024-rank allgather of
# 1 MiB (1 GiB to receive, every rank) needed 66,560 mappings of 16 MiB blocks, past the kernel's
# 65,530 (vm.max_map_count, which only root raises). "local" maps one file, shared by every
# allocation of the same line of code, once per allocation and lazily: two mappings a rank at any
# size. Messages copy no payload either way (no private part): the simulated times are the same.
# A rank's copy of its own block (allgather, alltoall) lands in the one block under global, in the
# file at its offset under local: the largest receive buffer is then held once, in /dev/shm.
SHARED_KEY = "--cfg=smpi/shared-malloc"
SHARED_MODE = "local"
# The block of the global mode, when a user names it: larger blocks need fewer mappings, but
# every mapping is populated up front, so a 4-byte point maps a whole block per rank (1 GiB
# blocks: 138 host seconds for two points at 256 ranks). 16 MiB: an allgather of 1 MiB fits at 512 ranks.
BLOCK_KEY = "--cfg=smpi/shared-malloc-blocksize"
SHARED_BLOCK = 16 << 20


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
        env = {**job.env, "MPISCOPE_PLATFORM": platform.description, "MPISCOPE_SIM_BLOCK": block,
               "MPISCOPE_SIM_SHARED": shared}
        return Launch(argv=argv, env=env, oversubscribed=False)
