"""Doctor's launches, each under a time limit: a plain command on every host, the engine over
every rank (hello and the pair map), the fwq noise probe, and, when the job over all hosts
fails or hangs, the bisection that finds the host at fault. Only this module runs anything;
it returns Facts for the checks to judge."""
from __future__ import annotations

import os
import shlex
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from mpiscope.analysis.checks import governors
from mpiscope.doctor.facts import Facts, LaunchFacts
from mpiscope.doctor.library import MARK, SYS_MARK, TUNING_PREFIXES, answers, eager_params, mpich_device
from mpiscope.doctor.transport import OMPI_BTL, OMPI_PML, UCX_EP
from mpiscope.execute.part import SINGLETON_FIX, Target, _stop
from mpiscope.launchers import Job, default_launcher, launcher_for, local_cores
from mpiscope.launchers.placement import Placement
from mpiscope.mpi.library import MpiLibrary
from mpiscope.util import bounded
from mpiscope.util.errors import UsageError

STDERR_TAIL = 40
MAX_HOSTFILE_BYTES = 64 << 20  # a line per host
CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0")
# The launcher's rank variables, unset so that every host's engine prints its --mpi-info.
RANK_VARS = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")


@dataclass
class Setup:
    target: Target
    placement: Placement
    ranks: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    launcher_args: list[str] = field(default_factory=list)
    timeout_s: float = 60.0


def hosts_of(p: Placement) -> list[str]:
    """The hosts named (--hosts, --hostfile) or, inside a Slurm allocation, its nodes."""
    if p.hosts:
        return [h.split(":")[0] for h in p.hosts]
    if p.hostfile:
        try:
            lines = bounded.read_text(p.hostfile, MAX_HOSTFILE_BYTES, "a hostfile").splitlines()
        except (OSError, ValueError) as e:
            raise UsageError(f"--hostfile {p.hostfile}: {bounded.why(e)}: give a file with one host per line") from e
        return list(dict.fromkeys(ln.split()[0].split(":")[0] for ln in lines if ln.strip() and not ln.startswith("#")))
    nodelist = os.environ.get("SLURM_JOB_NODELIST")
    if nodelist and (p.launcher or default_launcher()) == "srun":
        try:
            done = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True,
                                  timeout=20)
            names = done.stdout.split()
            return names if len(names) > 1 else []
        except (OSError, subprocess.TimeoutExpired):
            return []
    return []


def run_bounded(argv: list[str], env: dict[str, str], limit: float, hosts: list[str]) -> LaunchFacts:
    """Run a launcher, keep its output, end it (and every rank it started) after `limit` s."""
    t0 = time.monotonic()
    facts = LaunchFacts(argv=argv, limit_s=limit, hosts=hosts)
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env={**os.environ, **env}, start_new_session=True)
    except OSError as e:
        facts.status, facts.stderr = "not-started", [str(e)]
        return facts
    out: list[str] = []
    err: list[str] = []

    def read(stream, into: list[str]) -> None:
        for raw in iter(stream.readline, b""):
            into.append(raw.decode(errors="replace").rstrip("\n"))

    readers = [threading.Thread(target=read, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=read, args=(proc.stderr, err), daemon=True)]
    for r in readers:
        r.start()
    try:
        proc.wait(timeout=limit)
        facts.status = "ok" if proc.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        _stop(proc)
        facts.status = "timeout"
    for r in readers:
        r.join(timeout=5)
    facts.exit_code = proc.poll()
    facts.elapsed_s = round(time.monotonic() - t0, 3)
    facts.stdout = list(out)
    kept = [ln for ln in err if UCX_EP.search(ln) or OMPI_PML.search(ln) or OMPI_BTL.search(ln)]
    facts.stderr = kept + [ln for ln in err[-STDERR_TAIL:] if ln not in kept]
    return facts


def verbosity(vendor: str, env: dict[str, str]) -> dict[str, str]:
    """What makes the library report its transports (unless the user set it)."""
    if vendor == "Open MPI":
        want = {"OMPI_MCA_pml_base_verbose": "10", "OMPI_MCA_btl_base_verbose": "10", "UCX_LOG_LEVEL": "info"}
    else:  # UCX's endpoint lines; with the OFI netmod, MPICH's summary names the provider
        want = {"UCX_LOG_LEVEL": "info", "MPIR_CVAR_DEBUG_SUMMARY": "1"}
    return {k: v for k, v in want.items() if k not in env and k not in os.environ}


class Prober:
    def __init__(self, s: Setup):
        self.s = s
        self.cores = local_cores()
        self.kind = s.placement.launcher or default_launcher()

    def launch(self, program: list[str], ranks: int, hosts: list[str] | None, env: dict[str, str] | None = None,
               per_node: int | None = None, limit: float | None = None) -> LaunchFacts:
        p = self.s.placement
        fields = p.job_fields()
        with tempfile.TemporaryDirectory(prefix="mpiscope-doctor-") as tmp:
            if hosts is not None and self.simulated:
                # simulated nodes are named in a hostfile, one rank each, in order
                listed = Path(tmp) / "hostfile"
                listed.write_text("\n".join(hosts) + "\n")
                fields.update(hostfile=str(listed))
            elif hosts is not None:
                fields.update(hosts=hosts, hostfile=None, nodes=None)
                if per_node is not None:
                    fields["ranks_per_node"] = per_node
            job = Job(program, ranks, {**self.s.env, **(env or {})}, list(self.s.launcher_args), **fields)
            launch = launcher_for(self.s.target.lib, job.launcher).command(job, self.cores)
            self.singleton_fix = launch.singleton_fix
            self.argv = launch.argv
            return run_bounded(launch.argv, launch.env, limit or self.s.timeout_s, hosts or [])

    @property
    def simulated(self) -> bool:
        return self.s.target.lib.vendor == "SMPI"

    def barrier(self, hosts: list[str]) -> LaunchFacts:
        """One barrier over `hosts`, one rank each (the simulated slow-host bisection's test)."""
        return self.launch(self.engine("barrier"), len(hosts), hosts)

    def engine(self, *args: str) -> list[str]:
        watchdog = max(1.0, 0.8 * self.s.timeout_s)  # a point that hangs; the launch's own limit stays
        return [str(self.s.target.engine), "--timeout", f"{watchdog:g}", *args]

    def reach(self, hosts: list[str]) -> LaunchFacts:
        """A plain command on every host: the engine's --mpi-info there, and what the host says
        of itself (its CPUs' governors, its clock source, the tuning variables a process
        started there sees, the library's eager limits by its own tool)."""
        unset = " ".join(f"-u {v}" for v in RANK_VARS)
        info = f"env {unset} {shlex.quote(str(self.s.target.engine))} --mpi-info"
        tool = library_tool(self.s.target.lib)
        prefixes = "|".join(TUNING_PREFIXES)
        lines = [
            'h=$(hostname)',
            f'printf "%s %s %s\\n" {MARK} "$h" "$({info} | tr -d "\\n")"',
            f'S="{SYS_MARK} $h"',
            'for f in /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do [ -r "$f" ] || continue; '
            'c=${f#/sys/devices/system/cpu/cpu}; printf "%s governor %s %s\\n" "$S" "${c%%/*}" "$(cat "$f")"; done',
            'd=/sys/devices/system/clocksource/clocksource0',
            '[ -r $d/current_clocksource ] && printf "%s clocksource %s\\n" "$S" "$(cat $d/current_clocksource)"',
            '[ -r $d/available_clocksource ] && printf "%s clocksources %s\\n" "$S" "$(cat $d/available_clocksource)"',
            f'env | grep -E "^({prefixes})" | while IFS= read -r l; do printf "%s env %s\\n" "$S" "$l"; done',
        ]
        if tool:
            lines.append(f'[ -x {shlex.quote(tool[0])} ] && {" ".join(map(shlex.quote, tool))} 2>/dev/null '
                         '| grep -iE "eager[a-z_]*(:value:| *=)" | while IFS= read -r l; do printf "%s param %s\\n" "$S" "$l"; done')
        lines.append("true")
        return self.launch(["sh", "-c", "\n".join(lines)], len(hosts), hosts, per_node=1)

    def reach_test(self, hosts: list[str]) -> LaunchFacts:
        """The plain command, passed only when every host of `hosts` answered."""
        r = self.reach(hosts)
        if r.ok and set(answers(r.stdout)) != set(hosts):
            r.status = "failed"
        return r

    def hello(self, hosts: list[str]) -> LaunchFacts:
        """A small MPI job: one rank per host (two on a host alone), every pair exchanges once."""
        ranks = len(hosts) if len(hosts) > 1 else 2
        return self.launch(self.engine("--sizes", "8", "--reps", "3", "--warmup", "1", "pairs"), ranks, hosts,
                           per_node=1 if len(hosts) > 1 else 2)


def bisect(hosts: list[str], test: Callable[[list[str]], LaunchFacts]) -> list[LaunchFacts]:
    """The launches that find the host(s) at fault once the job over `hosts` has failed: the
    first host alone, then halves of the rest, each with the first host (a known-good anchor),
    descending into a half that fails. One faulty host among H costs about 2 log2(H) launches
    (a failing launch is made twice)."""
    made: list[LaunchFacts] = []

    def passes(group: list[str]) -> bool:
        """A launch that fails is made once more: a host is blamed only for failing twice (a
        busy machine can make one launch time out)."""
        made.append(test(group))
        if not made[-1].ok:
            made.append(test(group))
        return made[-1].ok

    anchor, rest = hosts[0], hosts[1:]
    if not passes([anchor]):
        return made

    def search(group: list[str]) -> None:  # the anchor with `group` is known to fail
        if len(group) <= 1:
            return
        a, b = group[:len(group) // 2], group[len(group) // 2:]
        if passes([anchor, *a]):
            search(b)
            return
        search(a)
        if not passes([anchor, *b]):
            search(b)

    search(rest)
    return made


def bisect_slow(hosts: list[str], test: Callable[[list[str]], LaunchFacts]) -> list[LaunchFacts]:
    """The launches that find one slow host among `hosts` (a simulated platform: no launch fails
    and every time is exact): time a barrier over each half, descend into the slower half; after
    the first halving each half goes with a host of the faster one, so that a half of one host
    is still a barrier of two. One slow host among H costs 2 log2(H) launches of one point,
    where the pair map measures H(H-1)/2 pairs. Stops when neither half is slower."""
    from mpiscope.doctor.hosts import group_time, slower
    made: list[LaunchFacts] = []
    group, ref = list(hosts), []
    while len(group) > 1:
        a, b = group[:len(group) // 2], group[len(group) // 2:]
        made += [test([*ref, *a]), test([*ref, *b])]
        ta, tb = group_time(made[-2]), group_time(made[-1])
        if slower(ta, tb):
            group, ref = a, ref or b[:1]
        elif slower(tb, ta):
            group, ref = b, ref or a[:1]
        else:
            break
    return made


def pair_tests(f: Facts, pr: Prober) -> list[LaunchFacts]:
    """Two-host launches for the hosts the pair map suspects: first two hosts without any
    suspect (the reference), then each suspect with one of them."""
    from mpiscope.doctor.hosts import pair_times, slow_hosts
    import statistics
    ctxs, points = f.pairs.contexts if f.pairs else [], f.pairs.points("pairs") if f.pairs else []
    if len(ctxs) != 1 or not points:
        return []
    big = max(points, key=lambda p: p.size)
    found = [h for h, _ in slow_hosts({k: statistics.median(v) for k, v in pair_times(ctxs[0], big).items()})]
    good = [h for h in ctxs[0].hosts if h not in found]
    if not found or len(good) < 2:
        return []
    args = pr.engine("--sizes", str(big.size), "--max-time", "0.2", "--min-reps", "8", "--warmup", "2", "pairs")
    tests = [pr.launch(args, 2, good[:2], per_node=1)]
    tests += [pr.launch(args, 2, [good[0], h], per_node=1) for h in found]
    return tests


def library_tool(lib: MpiLibrary) -> list[str]:
    """The library's own report of its parameters (ompi_info reads OMPI_MCA_* and the
    parameter files, mpivars the MPI_T control variables), beside its launcher."""
    tool = ["ompi_info", "--param", "btl", "all", "--level", "9", "--parsable"] if lib.vendor == "Open MPI" \
        else ["mpivars"]
    return [str(lib.launcher.parent / tool[0]), *tool[1:]]


def protocol_limits(lib: MpiLibrary, env: dict[str, str], device: str | None = None) -> dict[str, str]:
    """The eager limits as the library's own tool reports them on this machine, with `env`
    applied; for MPICH those of its `device` (the job's library version says it). {} when the
    tool is missing or does not answer."""
    tool = library_tool(lib)
    if not Path(tool[0]).exists():
        return {}
    try:
        done = subprocess.run(tool, capture_output=True, text=True, timeout=30,
                              env={**os.environ, **env}, stdin=subprocess.DEVNULL, start_new_session=True)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return eager_params(lib.vendor, done.stdout, device)


def library_params(s: Setup, device: str | None = None) -> dict[str, str]:
    """protocol_limits of the setup's library with the user's --env."""
    return protocol_limits(s.target.lib, s.env, device)


# Under simulation the pair map (every pair a timed phase, every phase synchronising every rank)
# grows as hosts^3 in host time: up to this many nodes it is measured, above the bisection finds
# a slow host.
SIM_PAIR_MAP_MAX = 16


def gather_simulated(s: Setup) -> Facts:
    """doctor on a simulated platform: no host to reach or bind, no noise; the hello, then the
    pair map on a few nodes or the barrier bisection on many."""
    from mpiscope.execute.simcheck import check_platform
    from mpiscope.launchers.platform import parse
    from mpiscope.plan.engine import Part, Plan
    lib = s.target.lib
    ranks = s.ranks or 0
    platform = parse(s.placement.platform or "cluster", ranks or 2)
    # a platform file's hosts: the --hostfile's, else those its XML names
    named = hosts_of(s.placement) if platform.file and s.placement.hostfile else platform.hosts()
    if ranks > len(named):
        raise UsageError(f"--platform {platform.description}: {len(named)} host(s) for -n {ranks}: give -n "
                         f"{len(named)} or fewer")
    hosts = named[:ranks or None]
    ranks = len(hosts)
    # SimGrid's refusal of the file or the options is one line, before any launch
    with tempfile.TemporaryDirectory(prefix="mpiscope-doctor-") as tmp:
        where = s.placement
        if platform.file and not where.hostfile:
            (Path(tmp) / "hostfile").write_text("\n".join(hosts) + "\n")
            where = replace(where, hostfile=str(Path(tmp) / "hostfile"))
        check_platform(lib, s.target.engine, Part(Plan((), 1), dict(s.env), tuple(s.launcher_args), where),
                       hostfile_given=where is s.placement)
    pr = Prober(s)
    f = Facts(mpi_name=lib.name, vendor=lib.vendor, version=lib.version, launcher="smpirun", ranks=ranks,
              hosts=hosts, local_host=socket.gethostname(), local_cores=local_cores())
    where = hosts if platform.file else None  # a described platform writes its own hostfile
    f.job = pr.launch(pr.engine("--reps", "5", "--warmup", "1", "fwq"), ranks, where)
    if not (f.job.ok and len(f.job.contexts) == 1) or ranks < 3:
        return f
    if ranks <= SIM_PAIR_MAP_MAX:
        f.pairs = pr.launch(pr.engine("--sizes", "8,64K", "pairs"), ranks, where)
        f.pair_tests = pair_tests(f, pr)
    else:
        f.slow_bisection = bisect_slow(hosts, pr.barrier)
    return f


def gather(s: Setup) -> Facts:
    lib = s.target.lib
    if lib.vendor == "SMPI":
        return gather_simulated(s)
    hosts = hosts_of(s.placement)
    ranks = s.placement.ranks(s.ranks) or (len(hosts) if hosts else 2)
    f = Facts(mpi_name=lib.name, vendor=lib.vendor, version=lib.version, launcher=Prober(s).kind, ranks=ranks,
              hosts=hosts, local_host=socket.gethostname(), local_cores=local_cores())
    pr = Prober(s)
    job_hosts = hosts
    if len(hosts) > 1:
        from mpiscope.doctor.hosts import unanswered
        f.reach = pr.reach(hosts)
        if not f.reach.ok and not answers(f.reach.stdout):
            f.reach_bisection = bisect(hosts, pr.reach_test)
        named, suspects = unanswered(f)
        answered = [h for h in hosts if h not in named and h not in suspects]
        if answered and len(answered) < len(hosts):
            job_hosts = answered  # the others are named already; the job measures the rest
            ranks = len(answered) if s.ranks is None else ranks
            f.ranks = ranks
    per_node = None if s.ranks or s.placement.ranks_per_node else (1 if job_hosts else None)
    where = job_hosts or None
    f.job = pr.launch(pr.engine("--reps", "5", "--warmup", "1", "fwq"), ranks, where, per_node=per_node)
    f.singleton_fix = pr.singleton_fix or SINGLETON_FIX
    if f.launcher == "srun":
        f.pmi = next((a.split("=", 1)[1] for a in pr.argv if a.startswith("--mpi=")), None)
    ctxs = f.job.contexts
    one_job = f.job.ok and len(ctxs) == 1 and ctxs[0].world_size == ranks
    if one_job and ranks > 1:
        f.doctor_env = verbosity(lib.vendor, s.env)
        f.pairs = pr.launch(pr.engine("--sizes", "8,64K", "--max-time", "0.1", "--min-reps", "8", "--warmup", "2",
                                      "pairs"), ranks, where, f.doctor_env, per_node=per_node)
    if f.pairs is not None and len(job_hosts) > 2:
        f.pair_tests = pair_tests(f, pr)
    if one_job:
        f.noise = pr.launch(pr.engine("--reps", "2000", "--warmup", "20", "--raw", "fwq"), ranks, where,
                            per_node=per_node)
    elif not f.job.ok and len(job_hosts) > 1:
        f.bisection = bisect(job_hosts, pr.hello)
    if ctxs:
        cpus = sorted({c for r in ctxs[0].ranks if r.host == f.local_host for c in r.cpus})
        f.governors = governors(cpus)
    f.library_params = library_params(s, mpich_device(ctxs[0].mpi_library_version) if ctxs else None)
    try:
        f.clocksource = (CLOCKSOURCE / "current_clocksource").read_text().strip()
        f.clocksources = (CLOCKSOURCE / "available_clocksource").read_text().split()
    except OSError:
        pass
    return f

