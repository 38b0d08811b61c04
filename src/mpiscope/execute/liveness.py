"""Before tune races a knob, what serves each collective and whether the knob reaches it
(docs/tune.md "Layers" and "Liveness"): the layer is read from the library (MPICH's `mpivars`,
Open MPI's `coll_base_verbose` in one launch), and a deliberately poor choice of the knob is
timed against the library's own in a few launches a side, all collectives packed into each
launch as the race packs them. A knob whose poor choice is not measurably slower (the results
layer's verdict is not "slower") is not live here: its candidates are not raced."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from mpiscope.analysis.tune import MARGIN, fastest_mode, judge, launch_points
from mpiscope.report.tune import level_proof_text
from mpiscope.analysis.tunelayers import han_fallbacks, han_forcing_rules, han_level_proof, han_lookups, \
    han_rules_read, layer_environment
from mpiscope.mpi.collectives import DEFAULT, Algorithm, mpivars, ompi_han_parameters
from mpiscope.plan.describe import Description
from mpiscope.mpi.layers import HAN, HAN_COMPONENTS, Knob, Serving, mpich_serving, ompi_serving, ompi_verbose_env, \
    ompi_verbose_lines, poor_algorithm, poor_parameters, timed_communicator, with_han_knobs

# `t` below is the tune (execute.tune.Tune), whose launches these are
ALGORITHM, LAYER = "algorithm", "layer"  # the knob a probe forces: the raced algorithm, or the layer above it
LEVEL = "level"  # a coll/han level, proven by the library's verbose output (`level_check`)
HAN_SUB_LEVELS = ("intra_node", "inter_node")  # the levels with no poor choice to time
HAN_RULES_VERBOSE = {"OMPI_MCA_coll_han_verbose": "80"}  # han prints each rule it finds in its rules file


@dataclass(frozen=True)
class Probe:
    """One knob of one collective forced to its poor choice."""
    collective: str
    knob: str           # ALGORITHM | LAYER
    variable: str
    poor: str           # the algorithm's name (ALGORITHM) or the layer variable's value (LAYER)
    env: dict[str, str] = field(default_factory=dict)


def nodes_of(d: Description) -> int:
    """The hosts a tune's description names (1 when it names none: one node)."""
    return max(len(d.hosts or ()), d.nodes or 1, 1)


def serving(t: Any, collectives: list[str]) -> dict[str, Serving]:
    """Per collective the layer that serves it at the tune's placement, asked of the library."""
    if t.vendor == "mpich":
        listed = mpivars(t.target.lib)
        return {c: mpich_serving(listed, c, nodes_of(t.d), t.d.env) for c in collectives}
    said = t.state.get("components")
    if said is None:  # one launch of every collective at its smallest size, the choice printed
        n = min(t.ranks)
        group = t._group(collectives, n, {c: ([min(t.sizes(c, n))] if c != "barrier" else None) for c in collectives},
                         ompi_verbose_env(), {"check": "layers", "launch": 0})
        run, out = t.session.run(t._measurement([group], "layers"))
        if out.status == "interrupted":
            raise KeyboardInterrupt
        said = ompi_verbose_lines(t._said(run, 0))
        t.state["components"] = said
        t.save()
    comm = timed_communicator(said)
    enabled = set(comm[1]) if comm else set()
    served = {c: ompi_serving(said, c) for c in collectives}
    if any(s.component == "han" for s in served.values()):  # han's own choices, from the library
        han = ompi_han_parameters(t.target.lib)
        served = {c: with_han_knobs(s, han, enabled) for c, s in served.items()}
    return served


def probes(t: Any, racing: dict[str, list[Algorithm]], served: dict[str, Serving]) -> list[Probe]:
    """The knobs to prove: each collective's raced algorithm variable (its poor algorithm), and
    the variable of the layer that serves it where that has a poor choice: MPICH's POSIX layer on
    a node (falling back to MPIR), its composition across nodes (the netmod alone), Open MPI's
    coll/han (basic's linear algorithms over the whole communicator)."""
    out = []
    for coll, algs in racing.items():
        candidates = [a for a in algs if a.name != DEFAULT and not a.layer]  # the layer's own are probed below
        poor = poor_algorithm(t.vendor, coll, [a.value for a in candidates])
        alg = next((a for a in candidates if a.value == poor), None)
        if alg is not None:
            variable = variable_of(alg)
            poorer = poor_parameters(t.vendor, coll, alg.value)
            name = alg.name + "".join(f",{k.split('_', 3)[-1].lower()}={v}" for k, v in poorer.items())
            out.append(Probe(coll, ALGORITHM, variable, name, {**alg.env, **poorer}))
        s = served.get(coll)
        layer = next((k for k in (s.knobs if s else ()) if k.poor and k.layer in (s.layer, s.component)), None)
        if s is not None and layer is not None:
            out.append(Probe(coll, LAYER, layer.variable, _label(layer, layer.poor), {layer.variable: layer.poor}))
    return out


def _label(k: Knob, value: str) -> str:
    """A knob's value with the library's words for it (han's component ids by name)."""
    words = dict(zip(k.values, k.labels)).get(value)
    return f"{value} ({words})" if words and words != value else value


def check(t: Any, found: list[Probe], launches: int, most: int) -> list[dict]:
    """`launches` rounds; in each, per rank count, one launch of the library's choice and one per
    kind of knob with every collective's poor choice of that kind, at the collective's largest
    size, in a random order; then, while a probe's verdict is inconclusive, one more round of
    those probes, up to `most` launches a side (from five launches on the results layer leaves a
    launch in another mode out). Per collective, rank count and knob the verdict of the poor
    choice against the library's (`analysis.tune.judge`): live when "slower"."""
    if not found:
        return []
    if all(largest(t, p.collective, n) is None for p in found for n in t.ranks):  # nothing to launch
        return [unmeasured(p.collective, n, p.knob, p.variable, p.poor, "") for p in found for n in t.ranks]
    rng = random.Random()
    for p in found:
        for n in t.ranks:
            t._default_ran(p.collective, n)  # resumed after the library's own choice failed: the same end
    run = t._run("liveness")
    if run is None:
        groups = [g for k in range(launches) for g in _round(t, found, k, rng)]
        run, out = t.session.run(t._measurement(groups, "liveness"), announce=t._announce("liveness"))
    else:
        out = t._resume(run)
    while True:
        if out is not None and out.status == "interrupted":
            raise KeyboardInterrupt
        _default_failed(t, found, run, out)
        rows = _rows(t, found, run)
        unsure = [(r["collective"], r["knob"]) for r in rows if not r["decided"]]
        done = 1 + max((part.tag.get("launch", 0) for part in run.meta().parts), default=0)  # rounds launched
        if not unsure or done >= most:
            return rows
        again = [p for p in found if (p.collective, p.knob) in unsure]
        out = t.session.add_parts(run, t.target, t._parts(_round(t, again, done, rng)))


def _default_failed(t: Any, found: list[Probe], run: Any, out: Any) -> None:
    """A rank count none of whose launches of the library's own choice measured anything: the
    launch itself fails (a bad --launcher-args, an unreachable host), and the tune ends as the
    race would end it (`Tune._failed`: one line naming the launcher's reason)."""
    if out is None or out.status == "ok":
        return
    measured = {p.ranks for p in run.records().points if p.tag.get("probe") == DEFAULT}
    for n in t.ranks:
        if n not in measured and any(largest(t, p.collective, n) is not None for p in found):
            t._failed(found[0].collective, n, DEFAULT, out, t._said(run, 0))


def _round(t: Any, found: list[Probe], k: int, rng: random.Random) -> list:
    """Round `k`'s launches: per rank count the library's choice, and each kind of knob's poor
    choices (each collective forced by its own variable), in a random order; every launch in the
    layers' steady state (`mpi.layers.steady_env`), as the race's. The library's choice is
    measured at every size the race measures and tagged as a race launch of the default: the
    race starts with those launches, and learns the machine's launch-to-launch noise from them."""
    steady = t.steady
    out = []
    for n in t.ranks:
        colls = [c for c in dict.fromkeys(p.collective for p in found) if largest(t, c, n) is not None]
        if not colls:  # the engine measures none of them at n ranks: their rows say so (`_rows`)
            continue
        wanted = {c: ([largest(t, c, n)] if c != "barrier" else None) for c in colls}
        every = {c: (t.sizes(c, n) if c != "barrier" else None) for c in colls}
        out.append(t._group(list(every), n, every, steady,
                            {"probe": DEFAULT, "launch": k, "algorithms": dict.fromkeys(colls, DEFAULT)}, rng))
        for kind in sorted({p.knob for p in found if p.collective in colls}):
            of = [p for p in found if p.knob == kind and p.collective in colls]
            env = {**steady, **{key: v for p in of for key, v in p.env.items()}}
            out.append(t._group([p.collective for p in of], n, {p.collective: wanted[p.collective] for p in of}, env,
                                {"probe": kind, "launch": k}, rng))
    rng.shuffle(out)
    return out


def largest(t: Any, coll: str, n: int) -> int | None:
    """The largest size the engine measures of `coll` at `n` ranks (barrier: 0, it has no size);
    None where it skips every size there (e.g. beyond its per-rank memory limit)."""
    if coll == "barrier":
        return 0
    sizes = t.sizes(coll, n)
    return max(sizes) if sizes else None


def unmeasured(coll: str, n: int, knob: str, variable: str, poor: str, run: str) -> dict:
    """The row of a knob the check cannot launch: the engine measures no size of `coll` at `n`
    ranks. Not live (nothing proves it), and decided: another round would measure nothing either."""
    return {"collective": coll, "ranks": n, "size": None, "knob": knob, "variable": variable, "poor": poor,
            "launches": [0, 0], "compared": [0, 0], "run": run, "live": False, "verdict": "unmeasured",
            "decided": True, "evidence": f"no size measured at {n} ranks (the engine skips every size of {coll} "
                                         f"there, e.g. beyond its memory limit): not proven live"}


def _rows(t: Any, found: list[Probe], run: Any) -> list[dict]:
    """Per probe and rank count its verdict: the poor choice against the library's, each side's
    launches of its fastest mode (`analysis.tune.fastest_mode`)."""
    points = launch_points(run.records().points, key="probe")
    rows = []
    for p in found:
        for n in t.ranks:
            size = largest(t, p.collective, n)
            if size is None:
                rows.append(unmeasured(p.collective, n, p.knob, p.variable, p.poor, str(run.path)))
                continue
            at = {k: lp for (c, rn, s, k), lp in points.items() if c == p.collective and rn == n and
                  (s == size or p.collective == "barrier")}
            d, poor = (fastest_mode(at[k]) if k in at else [] for k in (DEFAULT, p.knob))
            measured = [at[k].n if k in at else 0 for k in (DEFAULT, p.knob)]
            row = {"collective": p.collective, "ranks": n, "size": size, "knob": p.knob, "variable": p.variable,
                   "poor": p.poor, "launches": measured, "compared": [len(d), len(poor)], "run": str(run.path)}
            if len(d) < 2 or len(poor) < 2:
                row.update(live=False, verdict="inconclusive", decided=False,
                           evidence=f"{len(d)} and {len(poor)} launches to compare (the others failed, were "
                                    f"disturbed or ran in a slower mode): not proven live")
            else:
                r = judge(d, poor, MARGIN)
                # a verdict on two launches a side (one degree of freedom) comes undone with the third,
                # as the race's verdicts on the default do: decided from three on
                decided = r.verdict != "inconclusive" and min(len(d), len(poor)) >= 3
                modes = f" (fastest mode: {len(d)} of {measured[0]} and {len(poor)} of {measured[1]})" \
                    if [len(d), len(poor)] != measured else ""
                row.update(live=decided and r.verdict == "slower", verdict=r.verdict, decided=decided, ratio=r.ratio,
                           low=r.low, high=r.high,
                           evidence=f"{p.variable}={p.poor}: x{r.ratio:.2f} ({r.low:.2f}-{r.high:.2f}) of the "
                                    f"library's choice, {r.verdict}{'' if decided else ' (undecided)'}, "
                                    f"{len(d)}+{len(poor)} launches{modes}")
            rows.append(row)
    return rows


def level_candidates(racing: dict[str, list[Algorithm]]) -> dict[tuple[str, str], Algorithm]:
    """Per collective and coll/han sub-level (intra- and inter-node) the first candidate raced
    there: its component is the one the level check forces."""
    out: dict[tuple[str, str], Algorithm] = {}
    for coll, algs in racing.items():
        for a in algs:
            level = a.value.split("=", 1)[0] if a.layer == HAN else ""
            if level in HAN_SUB_LEVELS:
                out.setdefault((coll, level), a)
    return out


def level_check(t: Any, racing: dict[str, list[Algorithm]]) -> list[dict]:
    """coll/han's intra- and inter-node levels proven by the library's own words: per collective
    with a candidate at such a level and rank count one launch of that collective alone at its
    largest size, with a rules file forcing each level to its first candidate's component and
    `coll_han_verbose` 80; han prints each rule it finds, with the collective, level, message size
    and component. A level is live where a rule naming the forced component was found for the
    timed calls (`analysis.tunelayers.han_level_proof`). One collective a launch: han builds some
    collectives of others (its allgather bcasts the gathered buffer within the node), whose
    lookups would otherwise pass for the timed calls of those others. The rows as `check`'s, kept
    in the tune's state."""
    found = level_candidates(racing)
    if not found or t.state.get("levels") is not None:
        return list(t.state.get("levels") or [])
    forced: dict[str, dict[str, str]] = {}
    for (coll, level), a in found.items():
        forced.setdefault(coll, {})[level] = a.value.split("=", 1)[1]
    path = t.dir / "han-levels.conf"
    path.write_text(han_forcing_rules(forced))
    env = {**t.steady, **layer_environment("openmpi", path), **HAN_RULES_VERBOSE}
    rows = []
    for n in t.ranks:
        for coll, levels in forced.items():
            size = largest(t, coll, n)
            if size is None:
                rows += [unmeasured(coll, n, LEVEL, variable_of(found[coll, level]), component, "")
                         for level, component in levels.items()]
                continue
            run, out = t.session.run(t._measurement([t._group([coll], n, {coll: [size]}, env,
                                                              {"check": "levels", "launch": 0})], "levels"))
            if out.status == "interrupted":
                raise KeyboardInterrupt
            said = t._said(run, 0)
            lookups, read, fell = han_lookups(said), han_rules_read(said), han_fallbacks(said)
            ended = "" if out.status == "ok" else f" (the launch ended {out.status}: " \
                f"{(out.error or out.status).splitlines()[0]})"
            for level, component in levels.items():
                proof = han_level_proof(lookups, coll, level, component, size, read, fell)
                live, why = proof.live, level_proof_text(proof)
                label = f"{HAN_COMPONENTS.index(component)} ({component})" if component in HAN_COMPONENTS else component
                rows.append({"collective": coll, "ranks": n, "size": size, "knob": LEVEL,
                             "variable": variable_of(found[coll, level]), "poor": label, "launches": [0, 1],
                             "compared": [0, 1], "run": str(run.path), "live": live,
                             "verdict": "named" if live else "not named", "decided": True, "evidence": why + ended})
    t.state["levels"] = rows
    t.save()
    return rows


def variable_of(a: Algorithm) -> str:
    """The variable that forces `a`, whose liveness admits it to the race: a layer's choice its
    layer's variable (the first it sets: `mpi.layers.layer_algorithms`), an algorithm its
    `_ALGORITHM` (MPICH) or `_algorithm` (Open MPI) variable."""
    if a.layer:
        return next(iter(a.env), "")
    return next((k for k in a.env if k.endswith("_ALGORITHM") or k.endswith("_algorithm")), "")


@dataclass(frozen=True)
class Proven:
    """What the liveness check proved, per variable: (collective, ranks, variable) -> live. A
    candidate is raced only where its own variable was proven live (timed against its poor
    choice, or for han's intra- and inter-node levels named by the library's verbose output:
    `level_check`); one whose variable nothing checked is not proven by another variable's
    check. `checked` False: the check was skipped, every candidate raced."""
    live: dict[tuple[str, int, str], bool] = field(default_factory=dict)
    rows: tuple[dict, ...] = ()
    checked: bool = False

    @classmethod
    def of(cls, rows: list[dict], checked: bool) -> "Proven":
        return cls({(r["collective"], r["ranks"], r["variable"]): r["live"] for r in rows}, tuple(rows), checked)

    def admits(self, coll: str, n: int, a: Algorithm) -> bool:
        return a.name == DEFAULT or not self.checked or self.live.get((coll, n, variable_of(a)), False)

    def unproven(self, racing: dict[str, list[Algorithm]], ranks: list[int]) -> list[dict]:
        """Per collective, rank count and variable whose candidates are not raced: the candidates
        and why (its own check's evidence, or that nothing checked it)."""
        out = []
        for coll, algs in racing.items():
            for n in ranks:
                by_var: dict[str, list[str]] = {}
                for a in algs:
                    if not self.admits(coll, n, a):
                        by_var.setdefault(variable_of(a), []).append(a.name)
                for var, names in by_var.items():
                    row = next((r for r in self.rows if (r["collective"], r["ranks"], r["variable"]) == (coll, n, var)),
                               None)
                    proven = sorted({r["variable"] for r in self.rows if r["collective"] == coll and r["ranks"] == n
                                     and r["live"]})
                    why = (f"its own check did not prove it: {row['evidence']}" if row else
                           "no check of its own: tune knows no deliberately poor choice of it to time, and another "
                           "variable's check says nothing about it" + (f" (proven live here: {', '.join(proven)})"
                                                                      if proven else ""))
                    out.append({"collective": coll, "ranks": n, "variable": var, "candidates": names, "reason": why})
        return out
