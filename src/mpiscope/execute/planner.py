"""The one step from a description to a Measurement: the launch policy and the first round's
sampling, the placement and its room check, the engine's plan of every part, and one time budget
over them. `mpiscope run`, the API, a sweep's configurations and `run --again` all plan here."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from mpiscope.plan.describe import TUNE_ONLY, Description, given, to_json
from mpiscope.util.errors import UsageError
from mpiscope.launchers.placement import Placement, check_room, make_placement
from mpiscope.plan.engine import (DEFAULT_BENCHMARKS, DEFAULT_COLLECTIVE_SIZES, DEFAULT_COLLECTIVES, DEFAULT_PAIR_SIZES,
                           Part, Planned, default_ranks, make_plan, order_options, spread_budget)
from mpiscope.plan.repetition import LaunchPolicy, first_round_budget, policy_from, sampling
from mpiscope.plan.sizecap import check_size_count
from mpiscope.results.policy import POLICY
from mpiscope.execute.session import Measurement, target


def policy(d: Description) -> LaunchPolicy:
    return policy_from(d.launches, d.launch_target, d.time_budget)


def placement(d: Description) -> Placement:
    """The launchers' one placement check over the description's placement fields."""
    return make_placement(launcher=d.launcher, hosts=list(d.hosts) if d.hosts is not None else None,
                          hostfile=d.hostfile, nodes=d.nodes, ranks_per_node=d.ranks_per_node, mapping=d.map_by,
                          binding=d.bind_to, max_hosts=d.max_hosts, platform=d.platform)


@dataclass(frozen=True)
class Group:
    """One part of a measurement: benchmarks at sizes, with what sets it apart from the others."""
    benchmarks: tuple[str, ...]
    sizes: str | None
    units: str | None = None
    ranks: int | None = None          # None: the description's, else two for pair benchmarks, else the cores
    engine_options: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)    # over the description's
    tag: dict[str, Any] = field(default_factory=dict)    # a study's series
    mapping: str | None = None        # on hosts the launcher places the ranks so too (block, cyclic)
    # the engine plan's entries this part measures, in measuring order (tune's launches: the sizes
    # still racing, shuffled); None: all, in plan order
    points: Callable[[Planned], tuple[int, ...]] | None = None


def groups(d: Description) -> list[Group]:
    """What the description itself asks for: its benchmarks, or with none the characterisation
    (pair benchmarks on two ranks, then the main collectives on every core)."""
    from mpiscope.launchers import local_cores
    units = d.units if d.units != "bytes" else None  # the engine's default: its command line stays as it was
    mapping = d.order if d.order in ("block", "cyclic") and not d.map_by else None
    out = [Group(d.benchmarks or DEFAULT_BENCHMARKS, DEFAULT_PAIR_SIZES if d.default_plan else d.sizes, units,
                 mapping=mapping)]
    if d.benchmarks is None:
        out.append(Group(DEFAULT_COLLECTIVES, DEFAULT_COLLECTIVE_SIZES if d.default_plan else d.sizes,
                         units, ranks=max(2, local_cores()), mapping=mapping))
    return out


def measurement(d: Description, parts: Sequence[Group] | None = None, *, room: bool = True,
                more_hosts: str | None = "--hosts, --nodes", room_hint: str = "",
                factors: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
                keep_going: bool = False) -> Measurement:
    """What `d` measures, planned by the engine but not launched: `parts` (a study's series),
    or by default the description's own groups (then run.json keeps the description, for
    `run --again`). Builds the engine for `d.mpi` on first use. With `room`, a rank count far
    beyond the cores and hosts is refused unless `d.oversubscribe` (a batch job's nodes are not
    known before it runs, so it does not ask)."""
    from mpiscope.launchers import local_cores
    tuning = [k for k in given(d) if k in TUNE_ONLY]
    if parts is None and tuning:  # the description's own run would ignore them
        raise UsageError(f"{', '.join(tuning)}: only `mpiscope tune` reads {'it' if len(tuning) == 1 else 'them'}: "
                         f"leave {'it' if len(tuning) == 1 else 'them'} out of a run")
    for g in parts or groups(d):  # before the engine is built or asked: a billion sizes is one line
        check_size_count(g.sizes, d.max_sizes)
    pol = policy(d)
    light = _light(d, pol)
    if light:  # the default run: more launches, less time in each (POLICY.default_plan_*)
        pol = replace(pol, first=POLICY.default_plan_launches, then_s=POLICY.default_plan_then_s)
    ci_target, max_time = sampling(pol, d.ci_target, d.max_time, d.reps, d.time_budget)
    if light:
        ci_target, max_time = POLICY.default_plan_ci_target, POLICY.default_plan_max_time_s
    where = placement(d)
    t = target(d.mpi)
    asked = where.ranks(d.ranks)
    simulated = t.lib.vendor == "SMPI"
    if simulated and pol.auto:  # the simulator repeats a point: one launch, the engine's own sampling
        pol = replace(pol, first=1, then_s=None, simulated=True)
        ci_target, max_time = d.ci_target, d.max_time
    if d.platform and not simulated:
        raise UsageError(f"--platform describes a simulated platform, but {t.lib.name} is not SMPI: add --mpi smpi "
                         f"(`mpiscope mpi add smpi` registers it)")
    if asked is not None and room and not simulated:  # simulated ranks need no cores
        try:
            check_room(asked, where, local_cores(), insist=d.oversubscribe, more_hosts=more_hosts)
        except UsageError as e:
            raise UsageError(f"{e}{room_hint}") from e
    todo = list(parts) if parts is not None else groups(d)
    planned = []
    for g in todo:
        n = asked or g.ranks or default_ranks(g.benchmarks, t.engine, local_cores())
        planned.append(make_plan(t.engine, g.benchmarks, n, sizes=g.sizes, units=g.units, ci_target=ci_target,
                                 max_time=max_time, reps=d.reps, check=d.check, raw=d.raw,
                                 engine_options=[*order_options(d.order), *timeout_options(d.timeout), *d.engine_args,
                                                 *g.engine_options]))
    if d.find_switches:
        from mpiscope.execute.refine import check_refinable
        check_refinable(*planned[0])
    plans = spread_budget(planned, first_round_budget(pol))  # one budget for the whole measurement
    out = [Part(p, {**d.env, **g.env}, d.launcher_args,
                replace(where, mapping=g.mapping) if g.mapping and where.on_hosts else where, dict(g.tag),
                g.points(entries) if g.points else None)
           for p, (_, entries), g in zip(plans, planned, todo)]
    kept = {"description": to_json(d)} if parts is None else {}
    return Measurement(t, out, {**d.factors, **(factors or {})}, extra={**kept, **(extra or {})}, policy=pol,
                       keep_going=keep_going)


def _light(d: Description, pol: LaunchPolicy) -> bool:
    """The default run with auto launches and no sampling option: more launches, lighter ones."""
    return pol.auto and d.default_plan and all(v is None for v in (d.ci_target, d.max_time, d.reps, d.time_budget))


def first_round(d: Description) -> int:
    """The launches `d` asks of every point: a fixed count, or auto's first round."""
    pol = policy(d)
    return POLICY.default_plan_launches if _light(d, pol) else pol.first_round


def timeout_options(timeout: float | None) -> list[str]:
    """`--timeout S`: the engine's hard limit per point phase, progress or not (without it the
    limits follow progress: docs/reliability.md)."""
    return ["--timeout", f"{timeout:g}"] if timeout is not None else []


def stored_description(run) -> Description:
    """The description a run was measured from (run.json's `description`), for `run --again`."""
    from mpiscope.plan.describe import from_json
    data = run.meta().extra.get("description")
    if data is None:
        raise UsageError(f"run {run.id} keeps no description (a study, an import, or a run measured before runs "
                         f"kept theirs): measure it again with its options (`mpiscope show {run.id}` lists them)")
    return from_json(data, f"run {run.id}")
