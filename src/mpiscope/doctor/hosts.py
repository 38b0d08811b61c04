"""Every host: does it answer (a plain command through the launcher), does an MPI hello over all
of them finish in time, and, when not, which host is at fault; is one host's link much slower.

Finding the culprit is a pure rule over the launches made (`culprits`): a host is named when a
launch that failed holds it and every other host of that launch was in a launch that passed.
`execute.probe.bisect` chooses the launches so that this takes about log2(hosts) launches per faulty
host instead of one per pair."""
from __future__ import annotations

import statistics

from mpiscope.doctor import Check, fail, ok, skip, warn
from mpiscope.doctor.facts import Facts, LaunchFacts
from mpiscope.doctor.library import answers
from mpiscope.launchers.smpirun import simgrid_error
from mpiscope.records import Context, Point

GROUP = "hosts"
SLOW_RATIO = 3.0  # a host whose every pair is this much slower than the pairs without it
# A half of the hosts whose barrier is this much slower than the other half's holds the slow host:
# one host on the barrier's critical path at 10x (a planted slow link) makes a 64-node half
# 3-6x slower; under simulation the times are exact, so a modest ratio tells no noise apart.
GROUP_RATIO = 1.5
REACH_FIX = ("check that {hosts} is up and that the launcher reaches it (ssh keys, the batch system, the host "
             "name); leave it out with --hosts until it does")
HELLO_FIX = ("an MPI job through {hosts} cannot connect or start: check the host's network link and firewall "
             "(ip link, ping), and that it runs the same MPI; leave it out with --hosts meanwhile")
SLOW_FIX = ("check {host}'s network link (ip -s link, ethtool, tc qdisc show, error counters, cabling); "
            "leave it out with --hosts until it is fixed")


def culprits(tests: list[LaunchFacts]) -> tuple[list[str], list[str]]:
    """(named, suspects) from launches over host sets that passed or failed."""
    good = {h for t in tests if t.ok for h in t.hosts}
    named: set[str] = set()
    suspects: set[str] = set()
    for t in tests:
        if t.ok or any(u.ok and u.hosts == t.hosts for u in tests):
            continue  # passed, or failed once and passed when made again
        left = [h for h in t.hosts if h not in good]
        if len(left) == 1:
            named.add(left[0])
        else:
            suspects.update(left)
    return sorted(named), sorted(suspects - named)


def unanswered(f: Facts) -> tuple[list[str], list[str]]:
    """(named, suspects): hosts that did not answer the plain command. When some answered, the
    others are named by that one launch; when none did, by the bisection over the command."""
    r = f.reach
    if r is None:
        return [], []
    seen = set(answers(r.stdout))
    missing = [h for h in r.hosts if h not in seen]
    if not missing:
        return [], []
    if seen:
        return missing, []
    return culprits([r, *f.reach_bisection])


def reach(f: Facts) -> Check:
    name = "every host answers"
    r = f.reach
    if r is None:
        return skip(name, "one host (this machine)" if not f.hosts else "not tried")
    named, suspects = unanswered(f)
    how = f"no answer within {r.limit_s:g} s" if r.status == "timeout" else f"launch {r.status}, exit {r.exit_code}"
    if named:
        more = f", found in {len(f.reach_bisection)} more launch(es)" if f.reach_bisection else ""
        return fail(name, f"{', '.join(named)} did not answer ({how}{more}); "
                          f"{len(r.hosts) - len(named) - len(suspects)} of {len(r.hosts)} did",
                    REACH_FIX.format(hosts=", ".join(named)))
    if suspects:
        return fail(name, f"no host answered ({how}); suspects: {', '.join(suspects)}",
                    REACH_FIX.format(hosts=", ".join(suspects)))
    return ok(name, f"{len(r.hosts)} host(s) answered in {r.elapsed_s:.1f} s")


def hello(f: Facts) -> Check:
    name = "MPI hello on every host"
    job = f.job
    if job is None:
        return skip(name, "not launched")
    hosts = sorted({r.host for c in job.contexts for r in c.ranks})
    left_out = [h for h in f.hosts if job.hosts and h not in job.hosts]
    if job.ok and job.contexts and left_out:  # an ok here would contradict 'every host answers'
        return warn(name, f"{job.contexts[0].world_size} rank(s) on the {len(job.hosts)} host(s) that answered; "
                          f"not tried on {', '.join(left_out)}, which did not answer",
                    f"bring {', '.join(left_out)} back (see 'every host answers'), then run doctor again")
    if job.ok and job.contexts:
        return ok(name, f"{job.contexts[0].world_size} rank(s) on {len(hosts)} host(s) in {job.elapsed_s:.1f} s "
                        f"(limit {job.limit_s:g} s)")
    how = (f"did not finish within {job.limit_s:g} s" if job.status == "timeout"
           else f"failed (exit {job.exit_code})")
    if f.vendor == "SMPI":  # no host or network of this machine to blame: SimGrid says what is wrong
        return fail(name, f"the simulation {how}: SimGrid: {simgrid_error(chr(10).join(job.stderr))[:300]}",
                    "fix the platform where SimGrid says (a route, a host, a link), then run doctor again")
    named, suspects = culprits(([job] if job.hosts else []) + f.bisection)
    if named:
        return fail(name, f"the job over {len(job.hosts) or 1} host(s) {how}; host(s) at fault: {', '.join(named)} "
                          f"(found in {len(f.bisection)} more launch(es))", HELLO_FIX.format(hosts=", ".join(named)))
    if suspects:
        return fail(name, f"the job {how}; suspects: {', '.join(suspects)}", HELLO_FIX.format(hosts=", ".join(suspects)))
    tail = next((line for line in reversed(job.stderr) if line.strip()), "")
    return fail(name, f"the job {how}{': ' + tail[:200] if tail else ''}",
                "run the launcher by hand with the same arguments and read its messages")


def pair_times(ctx: Context, point: Point) -> dict[tuple[str, str], list[float]]:
    rows = (point.details.get("pair_map") or {}).get("one_pair", {}).get("matrix_us") or []
    host = {r.rank: r.host for r in ctx.ranks}
    out: dict[tuple[str, str], list[float]] = {}
    for a, row in enumerate(rows):
        for b, v in enumerate(row):
            if b > a and v is not None and host.get(a) != host.get(b):
                out.setdefault(tuple(sorted((host[a], host[b]))), []).append(float(v))  # type: ignore[arg-type]
    return out


def slow_hosts(times: dict[tuple[str, str], float], ratio: float = SLOW_RATIO) -> list[tuple[str, float]]:
    """Hosts every one of whose pairs is `ratio` times slower than the median pair without it."""
    hosts = sorted({h for pair in times for h in pair})
    out = []
    for h in hosts:
        mine = [t for p, t in times.items() if h in p]
        rest = [t for p, t in times.items() if h not in p]
        if mine and rest and min(mine) > ratio * statistics.median(rest):
            out.append((h, min(mine) / statistics.median(rest)))
    return out


def pair_time(t: LaunchFacts) -> float | None:
    """The one-pair time of a two-rank pair test at its largest size."""
    pts = t.points("pairs")
    if not t.ok or not pts:
        return None
    rows = (max(pts, key=lambda p: p.size).details.get("pair_map") or {}).get("one_pair", {}).get("matrix_us") or []
    return float(rows[0][1]) if len(rows) > 1 and rows[0][1] is not None else None


def confirm(found: list[tuple[str, float]], tests: list[LaunchFacts]) -> tuple[list[tuple[str, float]], str]:
    """Suspects whose own pair test is SLOW_RATIO times the pair test without them. The tests
    are two-host launches: the first without any suspect (the reference), then one per suspect."""
    if not tests:
        return found, "none made"
    ref = pair_time(tests[0])
    out = []
    shown = [f"{' - '.join(tests[0].hosts)} {ref:.3g} us" if ref else f"{' - '.join(tests[0].hosts)} failed"]
    for h, _ in found:
        mine = next((t for t in tests[1:] if h in t.hosts), None)
        tm = pair_time(mine) if mine else None
        if mine is not None:
            shown.append(f"{' - '.join(mine.hosts)} {tm:.3g} us" if tm else f"{' - '.join(mine.hosts)} failed")
        if ref and (tm is None or tm > SLOW_RATIO * ref):
            out.append((h, (tm or float("inf")) / ref))
    return out, "; ".join(shown)


def group_time(t: LaunchFacts) -> float | None:
    """The barrier time (µs) a launch over a group of hosts measured, None when it did not."""
    pts = t.points("barrier")
    return pts[0].time_us.median if t.ok and pts else None


def slower(a: float | None, b: float | None) -> bool:
    """Whether the group timed `a` holds a slow host that the group timed `b` lacks."""
    return a is not None and b is not None and a > GROUP_RATIO * b


def slow_culprit(tests: list[LaunchFacts]) -> str | None:
    """The host the barrier bisection isolated: the launches come in pairs (two halves, each
    with the same reference host after the first halving); the slower of each pair is descended
    into, and the host left when no faster launch holds it is named. None when a pair was even
    (no slow host, or the slowness is not in one host)."""
    group: list[str] = []
    good: set[str] = set()
    for a, b in zip(tests[::2], tests[1::2]):
        ta, tb = group_time(a), group_time(b)
        if slower(ta, tb):
            group, good = a.hosts, good | set(b.hosts)
        elif slower(tb, ta):
            group, good = b.hosts, good | set(a.hosts)
        else:
            return None
    left = [h for h in group if h not in good]
    return left[0] if len(left) == 1 else None


def slow_by_bisection(f: Facts, name: str) -> Check:
    tests = f.slow_bisection
    pairs = len(f.hosts) * (len(f.hosts) - 1) // 2
    cost = f"{len(tests)} launch(es) of one barrier each, where the pair map measures {pairs} pairs"
    host = slow_culprit(tests)
    if host is None:
        return ok(name, f"no half of the {len(f.hosts)} hosts had a barrier {GROUP_RATIO:g}x slower than the "
                        f"other's ({cost})")
    path = ", ".join(f"{len(t.hosts)} hosts {group_time(t) or float('nan'):.3g} us" for t in tests)
    return fail(name, f"{host} slows every barrier it is in; found by halving: {cost} ({path})",
                SLOW_FIX.format(host=host))


def slow(f: Facts) -> Check:
    name = "no slow host link"
    if f.slow_bisection:
        return slow_by_bisection(f, name)
    job = f.pairs
    ctxs = job.contexts if job else []
    points = job.points("pairs") if job else []
    if len(ctxs) != 1 or not points or len(ctxs[0].hosts) < 2:
        return skip(name, "needs one job over two or more hosts")
    big = max(points, key=lambda p: p.size)
    per_pair = {k: statistics.median(v) for k, v in pair_times(ctxs[0], big).items()}
    if len(ctxs[0].hosts) == 2:
        shown = "; ".join(f"{a} - {b}: {t:.3g} us" for (a, b), t in per_pair.items()) or "no pair measured"
        return ok(name, f"one host pair ({shown} at {big.size} B); three or more hosts are needed to tell which "
                        f"end of a slow link is at fault")
    found = slow_hosts(per_pair)
    fig = (f"{len(per_pair)} host pairs at {big.size} B: median {statistics.median(per_pair.values()):.3g} us, "
           f"slowest {max(per_pair.values()):.3g} us")
    if found:
        confirmed, tested = confirm(found, f.pair_tests)
        if confirmed:
            hosts = ", ".join(f"{h} ({r:.1f}x)" for h, r in confirmed)
            return fail(name, f"every pair through {hosts} is slower than the pairs without it; {fig}; "
                              f"confirmed by {len(f.pair_tests)} pair test(s): {tested}",
                        SLOW_FIX.format(host=", ".join(h for h, _ in confirmed)))
        return warn(name, f"pairs through {', '.join(h for h, _ in found)} were slow in the map but not in the "
                          f"pair tests ({tested}): a busy machine, not the link; {fig}",
                    "run doctor again on quiet hosts to tell")
    worst = max(per_pair.items(), key=lambda kv: kv[1])
    med = statistics.median(per_pair.values())
    if worst[1] > SLOW_RATIO * med:
        return warn(name, f"pair {' - '.join(worst[0])} is {worst[1] / med:.1f}x the median; {fig}",
                    "check the link between these two hosts (the switch port, the route between them)")
    return ok(name, fig)


def checks(f: Facts) -> list[Check]:
    return [Check(**{**c.__dict__, "group": GROUP}) for c in (reach(f), hello(f), slow(f))]
