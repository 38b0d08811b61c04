"""Where ranks go, from the user's options: checked once, then handed to every launcher
adapter with the job (launcher, hosts, hostfile, nodes, ranks per node, mapping, binding)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mpiscope.util.errors import UsageError
from mpiscope.launchers.base import BINDINGS, MAPPINGS
from mpiscope.util.typed import dump


@dataclass(frozen=True)
class Placement:
    """Only what the user chose; None leaves it to the launcher."""
    launcher: str | None = None        # mpiexec | srun; None: srun inside an allocation, else mpiexec
    hosts: tuple[str, ...] | None = None
    hostfile: str | None = None
    nodes: int | None = None
    ranks_per_node: int | None = None
    mapping: str | None = None         # block | cyclic
    binding: str | None = None         # none | core | hwthread | socket | numa
    platform: str | None = None        # a simulated platform (SMPI only): description or XML file

    @property
    def on_hosts(self) -> bool:
        """Ranks go to named machines (which may be namespaces of this one)."""
        return bool(self.hosts or self.hostfile)

    @property
    def host_count(self) -> int | None:
        """How many nodes the placement names, when it names them (hosts or --nodes)."""
        return len(self.hosts) if self.hosts else self.nodes

    def ranks(self, asked: int | None) -> int | None:
        """The rank count: the one asked for, checked against the room the placement gives,
        or, when none was asked for, ranks per node x nodes (None: the caller's default)."""
        per, count = self.ranks_per_node, self.host_count
        if asked is None:
            return per * count if per and count else None
        if asked < 1:
            raise UsageError(f"-n/--ranks must be at least 1, got {asked}")
        if per and count and asked > per * count:
            raise UsageError(f"-n {asked} does not fit {count} node(s) x {per} rank(s) per node: use "
                             f"-n {per * count} or fewer, or more --ranks-per-node")
        return asked

    def job_fields(self) -> dict[str, Any]:
        """The launcher adapters' Job fields."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}

    def to_json(self) -> dict[str, Any]:
        return dump(self)


def make_placement(*, launcher: str | None = None, hosts: list[str] | tuple[str, ...] | None = None,
                   hostfile: str | None = None, nodes: int | None = None, ranks_per_node: int | None = None,
                   mapping: str | None = None, binding: str | None = None, max_hosts: int | None = None,
                   platform: str | None = None) -> Placement:
    """A checked placement, so a launcher never sees a combination it would reject half-way
    through a run; more hosts than `max_hosts` (default MAX_HOSTS) are refused."""
    limit = max_hosts or MAX_HOSTS
    if hosts is not None and len(hosts) > limit:  # a launcher would try to reach every one of them
        raise UsageError(f"--hosts names {len(hosts)} hosts, more than the limit of {limit}: give fewer, or "
                         f"raise the limit with --max-hosts {len(hosts)}")
    if hosts is not None and hostfile is not None:
        raise UsageError("--hosts and --hostfile both name the hosts: give one of them")
    if hosts is not None and (not hosts or any(not h or h.startswith(":") for h in hosts)):
        raise UsageError(f"--hosts expects host names separated by commas (a,b or a:2,b:2), got {list(hosts)}")
    if hostfile is not None:
        p = Path(hostfile)
        if not p.is_file():
            raise UsageError(f"--hostfile {hostfile}: no such file; give a file with one host per line")
        hostfile = str(p.resolve())  # the launcher may run elsewhere (a batch job's directory)
    for name, value in (("--ranks-per-node", ranks_per_node), ("--nodes", nodes)):
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1, got {value}")
    if hosts and nodes and nodes != len(hosts):
        raise UsageError(f"--nodes {nodes} but --hosts names {len(hosts)} host(s): give one of them")
    if mapping is not None and mapping not in MAPPINGS:
        raise UsageError(f"--map-by {mapping}: use one of {', '.join(MAPPINGS)}")
    if binding is not None and binding not in BINDINGS:
        raise UsageError(f"--bind-to {binding}: use one of {', '.join(BINDINGS)}")
    if platform is not None:
        from mpiscope.launchers.platform import parse
        parse(platform, 1)  # its grammar now; the node count is checked against the ranks at launch
    return Placement(launcher, tuple(hosts) if hosts is not None else None, hostfile, nodes, ranks_per_node,
                     mapping, binding, platform)


MAX_HOSTS = 1000  # more in one --hosts list is a mistake far more often than a machine
RANKS_PER_CORE_LIMIT = 8  # beyond this the launcher runs out of files or processes before MPI starts


def check_room(ranks: int, placement: Placement, cores: int, insist: bool = False,
               more_hosts: str | None = "--hosts, --nodes") -> None:
    """Refuse a rank count far beyond the cores the job can see (this host's, times the hosts or
    nodes named or allocated): MPICH stops at "Too many open files" after some hundreds of
    ranks, Open MPI keeps spawning. With `insist` (--oversubscribe) the user takes the blame;
    with a hostfile the cores are unknown here, so nothing is refused. `more_hosts` names how the
    caller's user names more hosts (None: the command cannot)."""
    import os
    if insist or placement.hostfile:
        return
    hosts = placement.host_count
    if hosts is None and os.environ.get("SLURM_JOB_NUM_NODES", "").isdigit():
        hosts = int(os.environ["SLURM_JOB_NUM_NODES"])
    room = max(1, cores) * (hosts or 1)
    limit = max(RANKS_PER_CORE_LIMIT * room, 16)
    if ranks > limit:
        where = f"{hosts} host(s) x {cores} cores" if hosts else f"{cores} cores on this host"
        raise UsageError(f"-n {ranks} is far beyond the {room} cores the job can use ({where}; at most {limit} "
                         f"ranks, {RANKS_PER_CORE_LIMIT} per core): "
                         + (f"name more hosts ({more_hosts}), " if more_hosts else "") + "lower -n, "
                         "or add --oversubscribe to launch them anyway (timings then measure the scheduler)")
