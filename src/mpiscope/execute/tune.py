"""The flow of `mpiscope tune`: race each collective's algorithms through the one measurement
session (every algorithm a part of its own, forced by the environment, launches shuffled), write
the library's tuning file, prove it: a canary copy the library must refuse (so the file is really
read) and a side-by-side run of the default against the file. Everything lives in one tune
directory (state.json, the race and verification runs, the file, tune.json) so that
`--resume DIR` carries on where Ctrl-C stopped it."""
from __future__ import annotations

import json
import random
import re
import shlex
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mpiscope.analysis.tune import KEEP, MARGIN, MEASURE, WITHDRAW, choose, judge, launch_medians, launch_noise, \
    settle, to_measure, void_by_controls
from mpiscope.analysis.tunefile import BandClash, Tuning, band_low, bands, environment, mpich_tree, ompi_classic, \
    ompi_json, ompi_uses_json, render
from mpiscope.analysis.tunelayers import ch4_tree, clashes_of, han_rules, layer_changes, layer_environment, \
    layer_file, node_keys
from mpiscope.report.tune import clash_reason, clash_refusal, control_reason, settle_reason
from mpiscope.util.atomic import write_atomic
from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.execute.part import Outcome, Target
from mpiscope.execute.liveness import ALGORITHM, LAYER, LEVEL, Proven, check, level_check, nodes_of, probes, \
    serving
from mpiscope.execute.planner import Group, measurement
from mpiscope.launchers import local_cores
from mpiscope.mpi.collectives import DEFAULT, TUNABLE, TUNE_SIZES, Algorithm, discover, libmpi_strings, \
    mpich_default_tree, mpivars, vendor_of
from mpiscope.mpi.layers import COMPOSITION, HAN, Serving, layer_algorithms, steady_env
from mpiscope.plan.describe import API, FIELDS, Description, Front, describe, given, to_json
from mpiscope.plan.engine import Part, Planned, make_plan
from mpiscope.execute.session import Measurement, Session
from mpiscope.store.owner import claim
from mpiscope.store.runs import STDERR, Run
from mpiscope.util import bounded

STATE, RESULT = "state.json", "tune.json"
MAX_STATE_BYTES = 64 << 20  # a tune's state and result hold a few kB per collective
# state.json's format: 2 since race launches force several collectives (tag "algorithms") and the
# side-by-side measures a candidate file; 3 since the race follows the liveness check (a race of
# format 2 raced knobs never proven live); 4 since it keeps the one experiment description. A
# directory of an earlier tune is refused.
FORMAT = 4
# coll/han's words for a rules file it cannot read (it then runs by its MCA parameters, without failing),
# printed only with its verbose output on
HAN_REFUSED = "could not fully read dynamic rules file"
HAN_SAYS = {"OMPI_MCA_coll_han_verbose": "1"}


# What a tune measures where its description leaves a field out: its own sizes and cap per point
# and one launch per part (the race, the check and the proof add launches round by round)
TUNE = Description(sizes=TUNE_SIZES, max_time=0.2, launches=1)
# the description's fields a tune reads; another one given is refused, not silently ignored
TUNE_FIELDS = ("benchmarks", "sizes", "mpi", "max_time", "env", "launcher_args", "launcher", "hosts", "hostfile",
               "nodes", "ranks_per_node", "map_by", "bind_to", "max_hosts", "max_sizes", "oversubscribe",
               "rank_counts", "rounds", "verify_launches", "verify_max_launches", "live_launches", "exhaustive",
               "algorithms", "launches")


def tune_description(values: dict[str, Any], front: Front = API, base: Description = TUNE) -> Description:
    """A tune's description from `values` (field name -> value as `front` gives it, over `base`),
    checked by the one description (`plan.describe`) and for what only a tune asks."""
    d = describe(values, front, base)
    unused = [FIELDS[k] for k in given(d) if k not in TUNE_FIELDS]
    if unused:
        raise UsageError(f"tune takes no {', '.join(front.name(f) for f in unused)}: leave "
                         f"{'it' if len(unused) == 1 else 'them'} out")
    unknown = [c for c in d.benchmarks or () if c not in TUNABLE]
    if unknown:
        raise UsageError(f"tune knows no collective '{unknown[0]}': give some of {', '.join(TUNABLE)}")
    return replace(d, launches=1)


class Tune:
    """One tune in its directory."""

    def __init__(self, directory: Path, d: Description, target: Target, session: Session):
        self.dir, self.d, self.target, self.session = directory, d, target, session
        self.vendor = vendor_of(target.lib)
        self.ranks = list(d.rank_counts or (2,))
        self.collectives = list(d.benchmarks or TUNABLE)
        self.verify_max = d.verify_max_launches or max(8, d.verify_launches)
        self.live_max = max(d.live_launches, 6)  # launches a side at most while a knob's liveness is inconclusive
        self.state = self._load_state()
        self._sizes: dict[tuple[str, int], list[int]] = {}
        self.proven = Proven()  # per collective, ranks and variable: whether the check proved it live
        self.nodes = nodes_of(d)
        self.served: dict[str, Serving] = {}
        # every race launch in the layers' steady state, as the liveness check's: its launches of
        # the library's default are then the race's first launches of the default
        self.steady = steady_env(self.vendor, mpivars(target.lib) if self.vendor == "mpich" else "")

    # -- state ---------------------------------------------------------------------------------
    def _load_state(self) -> dict:
        path = self.dir / STATE
        return read_state(path) if path.is_file() else {"format": FORMAT, "description": to_json(self.d),
                                                        "failed": {}}

    def save(self) -> None:
        write_atomic(self.dir / STATE, json.dumps(self.state, indent=1))

    # -- what the library offers --------------------------------------------------------------
    def choices(self, served: dict[str, Serving] | None = None
                ) -> tuple[dict[str, list[Algorithm]], dict[str, str], dict[str, str]]:
        """Per collective the algorithms to race (the default first), and the choices of the layer
        serving it across nodes (`mpi.layers.layer_algorithms`: MPICH's compositions, coll/han's
        components); the collectives the library cannot be told about, and the algorithms tune
        leaves out, each with the reason."""
        found = discover(self.target.lib, tuple(self.collectives), max(self.ranks))
        strings = libmpi_strings(self.target.lib) if self.vendor == "mpich" and served else None
        racing, cannot, left_out = {}, {}, {}
        for coll, ch in found.items():
            if served and coll in served and not ch.why_not:
                layered, left = layer_algorithms(served[coll], strings)
                ch = replace(ch, algorithms=ch.algorithms + tuple(layered), left_out={**ch.left_out, **left})
            left_out.update({f"{coll} {name}": why for name, why in ch.left_out.items()})
            if ch.why_not:
                cannot[coll] = ch.why_not
                continue
            wanted = self.d.algorithms.get(coll)
            algs = [a for n in wanted if n != DEFAULT for a in ch.named(n)] if wanted else list(ch.algorithms)
            racing[coll] = [Algorithm(DEFAULT)] + algs
        if not racing:
            raise UsageError(f"{self.target.lib.name} offers no choice of algorithm for "
                             f"{', '.join(self.collectives)}: " + "; ".join(f"{c}: {w}" for c, w in cannot.items()))
        return racing, cannot, left_out

    # -- the race ------------------------------------------------------------------------------
    def _group(self, colls: list[str], ranks: int, wanted: dict[str, list[int] | None], env: dict[str, str], tag: dict,
               rng: random.Random | None = None) -> Group:
        """One launch measuring `wanted` (collective -> its sizes; None: all) in a random order."""
        shuffle = (rng or random.Random()).shuffle

        def points(planned: Planned) -> tuple[int, ...]:
            ids = [e.id for e in planned.points if not e.skip and e.benchmark in wanted
                   and (wanted[e.benchmark] is None or e.size in wanted[e.benchmark])]
            shuffle(ids)  # the sizes and collectives of a launch in a random order
            return tuple(ids)
        return Group(tuple(colls), self.d.sizes, ranks=ranks, env=dict(env), tag=tag, points=points)

    def _measurement(self, groups: list[Group], what: str, keep_going: bool = True) -> Measurement:
        """A run of parts already numbered by launch (one launch each, as given), planned by the
        one planner (`execute.planner.measurement`)."""
        return measurement(self.d, groups, room=False, factors={"tune": what}, keep_going=keep_going)

    def _parts(self, groups: list[Group]) -> list[Part]:
        """More launches of a run already measuring (`session.add_parts`), planned as the first."""
        return self._measurement(groups, "more").parts

    def sizes(self, coll: str, ranks: int) -> list[int]:
        """The sizes the engine measures of `coll` at `ranks`, asked of the engine once (each ask
        is a process of its own, and the race asks every round)."""
        if (coll, ranks) not in self._sizes:
            from mpiscope.plan.engine import engine_plan
            plan, _ = make_plan(self.target.engine, [coll], ranks, max_time=self.d.max_time,
                                sizes=self.d.sizes if coll != "barrier" else None)
            self._sizes[coll, ranks] = sorted({e.size for e in engine_plan(self.target.engine, plan).points
                                               if not e.skip})
        return list(self._sizes[coll, ranks])

    def race_run(self, racing: dict[str, list[Algorithm]]) -> Run:
        """Rounds of launches until every point's race is over. A launch forces one algorithm of
        every collective still racing (each collective has its own variable) and measures only
        the sizes where that algorithm is still in the race: a launch's start-up costs as much as
        its points, so a round takes as many launches as its busiest collective has runners."""
        run = self._run("race")
        if run is not None:
            self._resume(run)  # the part Ctrl-C cut short is finished first
        rng = random.Random()
        for r in range(self.d.rounds):
            samples = self.samples(run)
            launches = [launch for n in self.ranks for launch in self._packed(racing, n, samples, r, rng)]
            if not launches:
                break
            rng.shuffle(launches)
            for members, part in launches:
                if run is None:  # the run begins with the round's first launch
                    m = self._measurement([part], "race")
                    run, out = self.session.run(m, announce=self._announce("race"))
                    self._after(run, m.parts[0], members, out, rng, 0)
                else:
                    self._add(run, members, part, rng)
        if run is None:
            raise UsageError("nothing to race: no collective has a size to measure at these ranks")
        return run

    def _packed(self, racing: dict[str, list[Algorithm]], n: int, samples: dict, r: int,
                rng: random.Random) -> list[tuple[list[tuple[str, Algorithm, list[int] | None]], Group]]:
        """Round `r`'s launches at `n` ranks: the runners of each collective in a random order,
        the k-th runner of every collective in launch k."""
        todo = {coll: self._round(coll, algs, n, samples, r) for coll, algs in racing.items()
                if self.races(coll, n, algs)}
        for runners in todo.values():
            rng.shuffle(runners)
        out = []
        for k in range(max((len(v) for v in todo.values()), default=0)):
            members = [(coll, alg, sizes) for coll, runners in todo.items() if k < len(runners)
                       for alg, sizes in [runners[k]]]
            out.append((members, self._launch(members, n, r, rng)))
        return out

    def _launch(self, members: list[tuple[str, Algorithm, list[int] | None]], n: int, r: int,
                rng: random.Random) -> Group:
        env = {**self.steady, **{k: v for _, alg, _ in members for k, v in alg.env.items()}}
        return self._group([c for c, _, _ in members], n, {c: sizes for c, _, sizes in members}, env,
                          {"algorithms": {c: alg.name for c, alg, _ in members}, "launch": r}, rng)

    def _round(self, coll: str, algs: list[Algorithm], n: int, samples: dict, r: int) -> list[tuple[Algorithm, list]]:
        """The algorithms (with their sizes) that race in round `r` at `n` ranks."""
        self._default_ran(coll, n)
        sizes = self.sizes(coll, n)
        running: dict[str, list[int]] = {}
        usable = [a for a in algs if f"{coll}|{n}|{a.name}" not in self.state["failed"] and self._live(coll, n, a)]
        noise = launch_noise([samples.get((coll, n, size, DEFAULT), []) for size in sizes])
        for size in sizes:
            at = {a.name: samples.get((coll, n, size, a.name), []) for a in usable}
            for name in to_measure(at, r, MARGIN, not self.d.exhaustive, DEFAULT, noise, len(sizes)):
                running.setdefault(name, []).append(size)
        return [(a, running[a.name] if coll != "barrier" else None) for a in usable if a.name in running]

    def _live(self, coll: str, n: int, a: Algorithm) -> bool:
        """Whether `a` is raced at `n` ranks: the default always; an algorithm or a layer's choice
        where the liveness check proved its own variable live (or did not run)."""
        return self.proven.admits(coll, n, a)

    def races(self, coll: str, n: int, algs: list[Algorithm]) -> bool:
        """Whether anything besides the default is raced for `coll` at `n` ranks."""
        return any(a.name != DEFAULT and self._live(coll, n, a) for a in algs)

    def samples(self, race: Run | None) -> dict[tuple, list[float]]:
        """(collective, ranks, size, algorithm) -> the launch medians of the race so far: its own
        launches, and first the liveness check's launches of the library's default (every size,
        in the same steady state), which the race therefore does not launch again."""
        check = self._run("liveness")
        out = launch_medians(check.records().points if check else [])
        for key, medians in (launch_medians(race.records().points) if race else {}).items():
            out[key] = out.get(key, []) + medians
        return out

    def _resume(self, run: Run) -> Outcome | None:
        """session.resume, refused in the words of a tune: while another mpiscope measures the
        run, what to run once it is gone is `tune --resume` of this tune, not `run --resume`."""
        with claim(run.path, f"run {run.id} of tune {self.dir}", f"`mpiscope tune --resume {self.dir}`"):
            return self.session.resume(run)

    def _announce(self, name: str):
        def keep(run: Run) -> None:  # written down before the first launch: --resume finds it
            self.state[name] = str(run.path)
            self.save()
        return keep

    def _after(self, run: Run, part: Part, members: list[tuple[str, Algorithm, list[int] | None]], out,
               rng: random.Random, since: int) -> None:
        """A launch that failed: the algorithm that failed it leaves the race with the reason (the
        library's last words, e.g. MPICH's "User set collective algorithm is not usable"), and the
        others measure again what the launch left unmeasured; where the culprit is not known, each
        alone. Ctrl-C ends the tune."""
        if out.status == "interrupted":
            raise KeyboardInterrupt
        if out.status == "ok":
            return
        n, r = part.plan.ranks, part.tag["launch"]
        culprit = self._culprit(run, members, since)
        if culprit is not None:
            self._failed(culprit[0], n, culprit[1].name, out, self._said(run, since))
        got = {(p.benchmark, p.size) for p in run.records().points
               if p.tag.get("algorithms") == part.tag["algorithms"] and p.tag.get("launch") == r}
        rest = []
        for coll, alg, sizes in members:
            left = [s for s in (sizes or self.sizes(coll, n)) if (coll, s) not in got]
            if left and not (culprit and (coll, alg.name) == (culprit[0], culprit[1].name)):
                rest.append((coll, alg, left if sizes is not None else None))
        # the culprit named: the others again in one launch; else each alone, to find it
        for again in ([rest] if culprit else [[m] for m in rest]):
            if again:
                self._add(run, again, self._launch(again, n, r, rng), rng)

    def _add(self, run: Run, members: list[tuple[str, Algorithm, list[int] | None]], group: Group,
             rng: random.Random) -> None:
        since = self._said_size(run)
        parts = self._parts([group])
        self._after(run, parts[0], members, self.session.add_parts(run, self.target, parts), rng, since)

    @staticmethod
    def _said_size(run: Run) -> int:
        path = run.path / STDERR
        return path.stat().st_size if path.is_file() else 0

    @staticmethod
    def _said(run: Run, since: int) -> str:
        """What the launcher wrote to the run's stderr.txt from byte `since` on (one launch's words)."""
        path = run.path / STDERR
        if not path.is_file():
            return ""
        with path.open("rb") as f:
            f.seek(since)
            return f.read().decode(errors="replace")

    def _culprit(self, run: Run, members: list[tuple[str, Algorithm, list[int] | None]],
                 since: int) -> tuple[str, Algorithm] | None:
        """The member whose forced algorithm failed the launch: the only one, or the one whose
        collective MPICH names in its refusal ("MPIR_Alltoall_impl(...): User set collective
        algorithm is not usable") or the engine names as the failed call ("MPI_Alltoall failed",
        as Open MPI's two_proc algorithms return MPI_ERR_UNSUPPORTED_OPERATION above 2 ranks)."""
        if len(members) == 1:
            return members[0][0], members[0][1]
        said = self._said(run, since)
        named = [(c, a) for c, a, _ in members if a.name != DEFAULT
                 and (f"MPIR_{c.capitalize()}_impl(" in said or f"MPI_{c.capitalize()} failed" in said)]
        return named[0] if len(named) == 1 else None

    def _failed(self, coll: str, n: int, alg: str, out, words: str) -> None:
        said = [ln.strip() for ln in words.splitlines() if re.search(r"not usable|error|Error|fault", ln)]
        why = (out.error or out.status).splitlines()[0].split("; see the launcher")[0]
        self.state["failed"][f"{coll}|{n}|{alg}"] = (why + (f": {said[-1]}" if said else ""))[:300]
        self.save()
        self._default_ran(coll, n)

    def _default_ran(self, coll: str, n: int) -> None:
        """MpiscopeError once the library's own choice failed at `n` ranks: every algorithm is
        judged against it, and a launch that fails with it (a bad --launcher-args, an unreachable
        host) fails with any other, so racing on would only fail each in turn."""
        why = self.state["failed"].get(f"{coll}|{n}|{DEFAULT}")
        if why is not None:
            raise MpiscopeError(f"tune cannot race {coll} at {n} ranks: its launch with the library's default "
                                f"algorithm failed ({' '.join(why.split())}); check the launch with `mpiscope run -b "
                                f"{coll} -n {n}` and the same options, then start a new tune")

    def _run(self, name: str) -> Run | None:
        path = self.state.get(name)
        return Run(Path(path)) if path and Path(path).is_dir() else None

    # -- the decision and the file -------------------------------------------------------------
    def decide(self, racing: dict[str, list[Algorithm]], run: Run) -> list[dict]:
        """Per collective, ranks and size the race's leader and the choice (`choose`: the leader
        only where the race proved it faster than the default)."""
        samples = self.samples(run)
        rows = []
        for coll, algs in racing.items():
            for n in self.ranks:
                for size in self.sizes(coll, n):
                    at = {a.name: samples[(coll, n, size, a.name)] for a in algs if (coll, n, size, a.name) in samples}
                    if DEFAULT not in at:
                        continue
                    c = choose(at, DEFAULT, MARGIN)
                    rows.append({"collective": coll, "ranks": n, "size": size, "chosen": c.algorithm,
                                 "leader": c.leader, "launches": {a: len(v) for a, v in at.items()},
                                 # the geometric mean of each algorithm's launch medians, us
                                 "times": {a: float(np.exp(np.mean(np.log(v)))) for a, v in at.items()},
                                 "race_ratio": asdict(c.against_default) if c.against_default else None})
        if not rows:
            raise MpiscopeError("the default algorithm was measured nowhere (its launches failed): see the race run's "
                                "stderr.txt")
        return rows

    def tuning_of(self, racing: dict[str, list[Algorithm]], rows: list[dict]) -> Tuning:
        """The file's bands from the rows' choices (`chosen` per collective, ranks and size)."""
        defaults = {f"{c} {k.variable.split('_dynamic_')[1].removesuffix('_module')}": dict(zip(k.values, k.labels))
                    .get(k.default, k.default) for c, s in self.served.items() for k in s.knobs
                    if k.layer == HAN and "_dynamic_" in k.variable}
        tuning = Tuning(self.vendor, self.target.lib.version, nodes=self.nodes, layer_defaults=defaults)
        by: dict[tuple[str, int], list[tuple[int, str, str, dict[str, str]]]] = {}
        layer_of: dict[str, str] = {}
        for row in rows:
            alg = next(a for a in racing[row["collective"]] if a.name == row["chosen"])
            layer_of[alg.name] = alg.layer
            by.setdefault((row["collective"], row["ranks"]), []).append(
                (row["size"], alg.name, alg.json_name or alg.value, alg.params))
        for (coll, n), chosen in by.items():
            tuning.rules.setdefault(coll, {})[n] = [replace(b, layer=layer_of.get(b.algorithm, ""))
                                                   for b in bands(chosen)]
        return tuning

    def file_path(self, stem: str = "tuning") -> Path:
        json_file = self.vendor == "mpich" or ompi_uses_json(self.target.lib.version)
        return self.dir / (stem + (".json" if json_file else ".conf"))

    def write(self, tuning: Tuning, stem: str = "tuning") -> tuple[Path, str]:
        """The algorithm layer's file, and beside it the serving layer's file where the tuning
        changes a layer's choice (`analysis.tunelayers`: MPICH's CH4 tree, coll/han's rules)."""
        tree = mpich_default_tree(self.target.lib) if self.vendor == "mpich" else None
        try:  # a shared band `agree` could not settle: the file is refused in report/'s words
            text, fmt = render(tuning, tree)
            layer = layer_file(tuning, mpich_default_tree(self.target.lib, COMPOSITION) if self.vendor == "mpich"
                               and layer_changes(tuning, COMPOSITION) else None)
        except BandClash as e:
            raise UsageError(clash_refusal(e.clash, tuning.nodes)) from None
        path = self.file_path(stem)
        write_atomic(path, text)
        if layer is not None:
            text, what = layer
            write_atomic(self.layer_path(path), text)
            fmt += f", and {what} ({self.layer_path(path).name})"
        return path, fmt

    def layer_path(self, path: Path) -> Path:
        """The serving layer's file beside the algorithm layer's file `path`."""
        return path.with_name(path.stem + ("-ch4.json" if self.vendor == "mpich" else "-han.conf"))

    def file_env(self, tuning: Tuning, path: Path) -> dict[str, str]:
        """The variables that make the library read the files written for `tuning` at `path`."""
        env = environment(tuning.library, path)
        if layer_changes(tuning, COMPOSITION if self.vendor == "mpich" else HAN):
            env.update(layer_environment(tuning.library, self.layer_path(path)))
        return env

    # -- proof ---------------------------------------------------------------------------------
    def canary(self, tuning: Tuning) -> dict:
        """A copy of the file whose first tuned band names an algorithm (or a layer's choice) the
        library does not have: a library that reads the file refuses it (the job fails, or coll/han
        says it could not read its rules file); one that ignores it runs."""
        coll, n, band = next((c, n, b) for c, by in tuning.rules.items() for n, bs in by.items() for b in bs
                             if b.algorithm != DEFAULT)
        wrong = {COMPOSITION: "MPIDI_No_such_composition", HAN: band.value.split("=")[0] + "=no_such_component",
                 "": "97" if tuning.library == "openmpi" else "MPIR_No_such_algorithm"}[band.layer]
        bad = replace(tuning, rules={coll: {n: [replace(b, value=wrong) if b is band else b
                                                for b in tuning.rules[coll][n]]}})
        if band.layer == COMPOSITION:
            text, suffix = json.dumps(ch4_tree(bad, mpich_default_tree(self.target.lib, COMPOSITION))), "-ch4.json"
        elif band.layer == HAN:
            text, suffix = han_rules(bad), "-han.conf"
        elif tuning.library == "mpich":
            text, suffix = json.dumps(mpich_tree(bad, mpich_default_tree(self.target.lib))), self.file_path().suffix
        else:
            text = json.dumps(ompi_json(bad)) if ompi_uses_json(tuning.version) else ompi_classic(bad)
            suffix = self.file_path().suffix
        path = self.dir / ("canary" + suffix)
        write_atomic(path, text)
        env = {**layer_environment(tuning.library, path), **(HAN_SAYS if band.layer == HAN else {})} if band.layer \
            else environment(tuning.library, path)
        # a measured size inside the band: the band's lower edge itself may round down (the engine
        # counts whole elements) into the band below, which keeps the default
        size = min(s for s in self.sizes(coll, n) if s >= band.low) if coll != "barrier" else None
        group = self._group([coll], n, {coll: [size] if size else None}, env, {"check": "canary", "launch": 0})
        run, out = self.session.run(self._measurement([group], "canary", keep_going=False))
        if out.status == "interrupted":
            raise KeyboardInterrupt
        said = [ln.strip() for ln in self._said(run, 0).splitlines() if HAN_REFUSED in ln]
        refused = out.status == "failed" or bool(said)
        error = (out.error or "").splitlines()[0][:300] if out.error else (said[0][:300] if said else None)
        return {"collective": coll, "ranks": n, "size": size, "file": str(path), "run": str(run.path),
                "refused": refused, "error": error}

    def verify(self, racing: dict[str, list[Algorithm]], path: Path, tuning: Tuning) -> tuple[Run, list[dict]]:
        """The default against the file, side by side: in each of `verify_launches` rounds one
        launch a side (every tuned collective and size in it), the two in a random order; then,
        while a change's gain is inconclusive, one more round of those points only, up to
        `verify_max` launches a side (`settle`)."""
        env = self.file_env(tuning, path)
        rng = random.Random()
        everything = {n: {c: (self.sizes(c, n) if c != "barrier" else None) for c in tuning.rules if n in tuning.rules[c]}
                      for n in sorted({n for by in tuning.rules.values() for n in by})}
        run = self._run("verify")
        if run is None:
            groups = [g for k in range(self.d.verify_launches) for g in self._sides(everything, k, env, rng)]
            run, out = self.session.run(self._measurement(groups, "verify", keep_going=False),
                                        announce=self._announce("verify"))
        else:
            out = self._resume(run)
        self._verified(out, run, path)
        start = 1 + max((p.tag.get("launch", 0) for p in run.records().points), default=0)
        rows = self._side_by_side(run, tuning)
        for k in range(max(start, self.d.verify_launches), self.verify_max):
            wanted: dict[int, dict[str, list[int] | None]] = {}
            for row in rows:
                if row["settle"] == MEASURE:
                    sizes = wanted.setdefault(row["ranks"], {}).setdefault(row["collective"], [])
                    if row["collective"] != "barrier":
                        sizes.append(row["size"])
            if not wanted:
                break
            wanted = {n: {c: (s or None) for c, s in by.items()} for n, by in wanted.items()}
            more = self._parts(self._sides(wanted, k, env, rng))
            self._verified(self.session.add_parts(run, self.target, more), run, path)
            rows = self._side_by_side(run, tuning)
        return run, void_by_controls(rows, DEFAULT, control_reason)

    def _sides(self, wanted: dict[int, dict[str, list[int] | None]], k: int, env: dict[str, str],
               rng: random.Random) -> list[Group]:
        """Round `k` of the side-by-side: per rank count one launch of the default and one of the
        file, measuring `wanted` (ranks -> collective -> sizes), the launches in a random order."""
        launch = []
        for n, colls in wanted.items():
            launch += [self._group(list(colls), n, colls, {}, {"side": "default", "launch": k}, rng),
                       self._group(list(colls), n, colls, env, {"side": "tuned", "launch": k}, rng)]
        rng.shuffle(launch)
        return launch

    @staticmethod
    def _verified(out, run: Run, path: Path) -> None:
        if out is not None and out.status == "interrupted":
            raise KeyboardInterrupt
        if out is not None and out.status != "ok":
            raise MpiscopeError(f"the side-by-side run of the default against {path} failed: {out.error} "
                                f"(run kept in {run.path})")

    def _side_by_side(self, run: Run, tuning: Tuning) -> list[dict]:
        """Per point the ratio tuned/default with its verdict, and, where the file changes the
        algorithm, what becomes of the change (`settle`: keep, measure, withdraw) and why."""
        samples = launch_medians(run.records().points, key="side")
        # the rounds launched: a side whose disturbed launches were left out keeps fewer, and a
        # change still inconclusive once `verify_max` rounds ran is withdrawn, not measured further
        rounds = 1 + max((part.tag.get("launch", 0) for part in run.meta().parts), default=0)
        rows = []
        for coll, by in tuning.rules.items():
            for n, bs in by.items():
                for size in self.sizes(coll, n):
                    d, t = samples.get((coll, n, size, "default")), samples.get((coll, n, size, "tuned"))
                    if d and t:
                        band = [b for b in bs if b.low <= size][-1]
                        r = judge(d, t, MARGIN)
                        what = settle(r, self.verify_max) if band.algorithm != DEFAULT else None
                        if what == MEASURE and rounds >= self.verify_max:
                            what = WITHDRAW
                        why = settle_reason(r, what) if what else None
                        rows.append({"collective": coll, "ranks": n, "size": size, "algorithm": band.algorithm,
                                     **asdict(r), "settle": what, "reason": why})
        return rows


def cost(run: Run, rounds: int, ranks: list[int], racing: dict[str, list[Algorithm]], sizes: dict[tuple, list[int]],
         seconds: float) -> dict:
    """What the race measured against measuring every algorithm at every size in every round:
    point-launches, and launches (a launch forces one algorithm of every collective at once)."""
    points = [p for p in run.records().points if "algorithms" in p.tag]
    measured = len(points)
    exhaustive = sum(len(algs) * len(sizes[(c, n)]) * rounds for c, algs in racing.items() for n in ranks)
    # a launch costs its start-up whatever it measures: the launches matter as much as the points
    launches = len(run.meta().launches)
    exh_launches = max(len(algs) for algs in racing.values()) * rounds * len(ranks)
    return {"launches": launches, "exhaustive_launches": exh_launches, "point_launches": measured,
            "exhaustive_point_launches": exhaustive,
            # one launch per algorithm and collective, as tune measured before it packed launches
            "unpacked_launches": sum(len(algs) for algs in racing.values()) * rounds * len(ranks),
            "share": measured / exhaustive if exhaustive else None, "seconds": seconds}


def tune(directory: Path, d: Description, target: Target, session: Session) -> dict:
    """The whole tune; its result (also written as tune.json in `directory`). One mpiscope at a
    time owns the directory: a second one (a `--resume` while it runs) is refused naming the first."""
    with claim(directory, f"tune {directory}", f"`mpiscope tune --resume {directory}`"):
        return _tune(directory, d, target, session)


def _tune(directory: Path, d: Description, target: Target, session: Session) -> dict:
    t = Tune(directory, d, target, session)
    started = time.monotonic()
    served = serving(t, t.collectives)
    t.served = served
    racing, cannot, left_out = t.choices(served if t.nodes > 1 else None)
    # live_launches 0: the check is skipped and every knob raced unproven (the race's own tests)
    liveness = check(t, probes(t, racing, served), d.live_launches, t.live_max) if d.live_launches else []
    liveness += level_check(t, racing) if d.live_launches else []  # han's sub-levels: the library's own words
    t.state.setdefault("liveness_seconds", time.monotonic() - started)  # a resumed check counts its first run only
    t.save()
    t.proven = Proven.of(liveness, bool(d.live_launches))
    result: dict[str, Any] = {
        "library": f"{target.lib.vendor} {target.lib.version}", "mpi": target.lib.name,
        "layers": {c: asdict(s) for c, s in served.items()}, "liveness": liveness,
        "not_live": {f"{r['collective']} {r['ranks']}": r["evidence"] for r in liveness
                     if r["knob"] == ALGORITHM and not r["live"]},
        # every variable whose candidates are not raced, with the reason (its own check, or none)
        "not_proven_live": t.proven.unproven(racing, t.ranks),
        "cannot": cannot, "left_out": left_out, "algorithms": {c: [a.name for a in algs] for c, algs in racing.items()},
        "cost": {}, "liveness_seconds": t.state["liveness_seconds"]}
    decisions: list[dict] = []
    raced = {c: algs for c, algs in racing.items() if any(t.races(c, n, algs) for n in t.ranks)}
    if raced:
        started = time.monotonic()
        run = t.race_run(racing)
        seconds = time.monotonic() - started + t.state.get("race_seconds_before", 0.0)
        t.state["race_seconds_before"] = seconds
        t.save()
        sizes = {(c, n): t.sizes(c, n) for c in racing for n in t.ranks}
        decisions = t.decide(racing, run)
        agree(decisions, lambda: t.tuning_of(racing, decisions), t.nodes)
        result.update(race_run=str(run.path), cost=cost(run, d.rounds, t.ranks, raced, sizes, seconds))
    result.update(failed=t.state["failed"], decisions=decisions)
    candidate = t.tuning_of(racing, decisions)
    if candidate.changes():
        # the race's changes go into a candidate file; only those its side-by-side proves reach the file
        cpath, _ = t.write(candidate, "candidate")
        result["candidate"] = str(cpath)
        result["canary"] = t.canary(candidate)
        if not result["canary"]["refused"]:
            result["error"] = (f"{target.lib.name} ignored {cpath}: a copy naming an algorithm it does not have ran "
                               f"without complaint, so the library does not read this file (format or variable "
                               f"not honoured by {target.lib.vendor} {target.lib.version})")
            withdraw(decisions, {}, "the library does not read the file")
        else:
            vrun, result["verify"] = t.verify(racing, cpath, candidate)
            result["verify_run"] = str(vrun.path)
            withdraw(decisions, {(v["collective"], v["ranks"], v["size"]): v for v in result["verify"]},
                     "not measured side by side")
            result["evidence"] = evidence(result["verify"])
    agree(decisions, lambda: t.tuning_of(racing, decisions), t.nodes)  # a band the side-by-side split again
    tuning = t.tuning_of(racing, decisions)
    result["reaches"] = reaches(tuning, liveness)
    path, fmt = t.write(tuning)
    # what a centre installs: the file's variables, and the layer the tune forced for every launch
    result.update({"file": str(path), "format": fmt, "env": {**d.env, **t.file_env(tuning, path)},
                   "node_keys": node_keys(t.vendor), "nodes": t.nodes,
                   "bands": {c: {str(n): [asdict(b) for b in bs] for n, bs in by.items()}
                             for c, by in tuning.rules.items()},
                   "changes": tuning.changes()})
    write_atomic(directory / RESULT, json.dumps(result, indent=1, default=str))
    return result


def reaches(tuning: Tuning, liveness: list[dict]) -> str:
    """Whether the written file changes the timed calls: it steers the algorithm variable's layer,
    which the liveness check found live (or not) per collective and rank count."""
    if not liveness:
        return "the liveness check was skipped (--live-launches 0): whether the file changes the timed calls is not proven"
    live = [f"{r['collective']} at {r['ranks']} ranks" for r in liveness if r["knob"] == ALGORITHM and r["live"]]
    dead = [f"{r['collective']} at {r['ranks']} ranks ({r['evidence']})" for r in liveness
            if r["knob"] == ALGORITHM and not r["live"]]
    bands_of = [b for by in tuning.rules.values() for bs in by.values() for b in bs if b.algorithm != DEFAULT]
    changed, layered = sum(not b.layer for b in bands_of), sum(bool(b.layer) for b in bands_of)
    text = (f"the file changes the timed calls where it changes the algorithm ({changed} band(s)): the variable "
            f"it steers was proven live for {', '.join(live)}" if changed else
            "the file changes no band: it leaves every timed call to the library's choice" if not layered else
            "the algorithm file changes no band")
    if layered:  # across nodes: the serving layer's file (its variable's own check; POSIX's is no file's)
        steered = [f"{r['collective']} at {r['ranks']} ranks ({r['variable']})" for r in liveness
                   if r["knob"] in (LAYER, LEVEL) and r["live"] and "_POSIX_" not in r["variable"]]
        text += (f"; the layer's file changes {layered} band(s): the layer's variable was proven live for "
                 f"{', '.join(steered) or 'none (the check was undecided or skipped there)'}")
    if dead:
        text += (f"; no {'algorithm band' if layered else 'file'} can change {'; '.join(dead)}: the variable it "
                 f"steers is not live there")
    return text


def agree(decisions: list[dict], tuning_of: Callable[[], Tuning], nodes: int) -> None:
    """Where the files would share one band between rank counts that chose differently (the
    inter-node step, which both libraries' formats key by the node count alone:
    `tunelayers.clashes_of`), each of those rank counts' changes in the clashing sizes goes back
    to the library's default, the reason kept as a side-by-side withdrawal's: the file holds a
    shared band's choice only where every rank count sharing it made it. A change is in the
    clashing sizes where the sizes its own measured size stands for (`own_sizes`) reach into them;
    its neighbours elsewhere keep theirs, even where the file merged them into one band with it.
    `tuning_of` gives the file's bands of the decisions as they stand."""
    while True:
        found = clashes_of(tuning_of())
        if not found:
            return
        before = sum(d["chosen"] == DEFAULT for d in decisions)
        for c in found:
            why = clash_reason(c, nodes)
            chosen = {b.algorithm for b in c.choices}
            for d in decisions:
                if d["collective"] != c.collective or d["ranks"] not in c.ranks or d["chosen"] not in chosen \
                        or d["chosen"] == DEFAULT:
                    continue
                low, high = own_sizes(decisions, d)
                if (c.high is None or low < c.high) and (high is None or c.low < high):
                    d.update(tried=d["chosen"], chosen=DEFAULT, withdrawn=why)
        if sum(d["chosen"] == DEFAULT for d in decisions) == before:
            return  # nothing left to withdraw: the writer refuses the file in one line


def own_sizes(decisions: list[dict], d: dict) -> tuple[int, int | None]:
    """The sizes a decision's band covers in the file before neighbours alike are merged: from
    its band's start (`tunefile.band_low`) up to the next measured size's (None: every larger)."""
    sizes = sorted({e["size"] for e in decisions if e["collective"] == d["collective"] and e["ranks"] == d["ranks"]})
    k = sizes.index(d["size"])
    return (band_low(sizes[k - 1] if k else None, d["size"]),
            band_low(sizes[k], sizes[k + 1]) if k + 1 < len(sizes) else None)


def withdraw(decisions: list[dict], verified: dict[tuple, dict], otherwise: str) -> None:
    """Each decision that changes the algorithm keeps it only where its side-by-side settled
    on KEEP (a proven gain); else it goes back to the default, the algorithm tried and the reason
    kept in the row (`tried`, `withdrawn`). `otherwise`: the reason where no side-by-side row is."""
    for d in decisions:
        if d["chosen"] == DEFAULT:
            continue
        v = verified.get((d["collective"], d["ranks"], d["size"]))
        if v is None or v["settle"] != KEEP:
            d.update(tried=d["chosen"], chosen=DEFAULT, withdrawn=v["reason"] if v else otherwise)


def evidence(verify: list[dict]) -> str:
    """What the side-by-side says about the candidate file's effect where it changes the algorithm
    (only the faster points reach the file, `withdraw`); the points where it keeps the default run
    the same algorithm on both sides, so a verdict other than same or inconclusive there is a
    false one: their count says how far to trust the others."""
    changed = [v for v in verify if v["algorithm"] != DEFAULT]
    faster = [v for v in changed if v["verdict"] == "faster"]
    slower = [v for v in changed if v["verdict"] == "slower"]
    text = (f"where the candidate file changes the algorithm ({len(changed)} points), the tuned run was faster at "
            f"{len(faster)}, slower at {len(slower)}, the same or inconclusive at {len(changed) - len(faster) - len(slower)}")
    if changed and not faster:
        text += (": no measured gain (the race's lead did not hold, or the machine's noise hides it), so the file "
                 "keeps the library's choice")
    controls = [v for v in verify if v["algorithm"] == DEFAULT]
    false = [v for v in controls if v["verdict"] in ("faster", "slower")]
    if controls:
        text += (f"; where both sides run the default ({len(controls)} points, a control), {len(false)} "
                 f"differ{'s' if len(false) == 1 else ''}")
        if false:
            text += ": the machine's noise between launches makes verdicts unreliable, measure on a quieter machine"
    return text


def read_state(path: Path) -> dict:
    """A tune's state.json, read as every file is (bounded); UsageError when it is not one."""
    try:
        state = bounded.read_json(path, MAX_STATE_BYTES, "a tune's state.json")
    except (OSError, ValueError) as e:
        raise UsageError(f"{path.parent} holds no tune to resume ({path}: {bounded.why(e)}): give the directory "
                         f"a tune printed") from e
    if not isinstance(state, dict):
        raise UsageError(f"{path.parent} holds no tune to resume ({path} is not a JSON object): give the "
                         f"directory a tune printed")
    return state


def load_description(directory: Path) -> Description:
    """The description of the tune in `directory`, to resume it."""
    path = directory / STATE
    state = read_state(path)
    try:
        d = tune_description(state["description"]) if "description" in state else earlier(state["spec"])
    except (KeyError, TypeError, AttributeError, UsageError) as e:
        raise UsageError(f"{directory} holds no tune to resume ({path}: {bounded.excerpt(str(e), 200)}): give the "
                         f"directory a tune printed") from e
    if state.get("format") != FORMAT:
        # its race launches are tagged one collective each, or its race ran without the liveness
        # check, or its side-by-side measured a file that held unproven changes: none is carried on
        raise UsageError(f"{directory} was written by an earlier mpiscope tune and cannot be resumed (its runs stay "
                         f"readable): start it again with `{again(d)}`")
    if (directory / RESULT).exists():  # resuming would race its failed algorithms again
        raise UsageError(f"the tune in {directory} is finished, nothing is left to resume: `mpiscope tune --show "
                         f"{_file_of(directory / RESULT)}` shows its file, `{again(d)}` starts a new one")
    return d


def earlier(spec: dict) -> Description:
    """The description of a tune that kept its own spec (format 3 and before), for the command
    that starts it again."""
    placement = {"mapping": "map_by", "binding": "bind_to"}
    values = {"mpi": spec.get("mpi"), "benchmarks": spec.get("collectives"), "rank_counts": spec.get("ranks"),
              "sizes": spec.get("sizes"), "rounds": spec.get("rounds"), "max_time": spec.get("max_time"),
              "live_launches": spec.get("live_launches"), "exhaustive": not spec.get("race", True),
              "algorithms": spec.get("only") or None, "env": spec.get("env") or None,
              **{placement.get(k, k): v for k, v in (spec.get("placement") or {}).items()}}
    return tune_description(values)


def _file_of(result: Path) -> str:
    """The tuning file a finished tune's tune.json names ("FILE" when it cannot be read)."""
    try:
        tuned = bounded.read_json(result, MAX_STATE_BYTES, "a tune's tune.json")
    except (OSError, ValueError):
        return "FILE"
    return str(tuned.get("file", "FILE")) if isinstance(tuned, dict) else "FILE"


def again(d: Description) -> str:
    """The command line of a new tune with `d`'s measuring options (each field by its flag)."""
    words = ["mpiscope", "tune", *(d.benchmarks or ())]
    options = given(d)
    first = ("mpi", "rank_counts", "sizes")
    for name in sorted(options, key=lambda k: first.index(k) if k in first else len(first) + list(FIELDS).index(k)):
        value, flag = options[name], FIELDS[name].flag.split("/")[0]
        if name in ("benchmarks", "launches"):
            continue
        if name == "launcher_args":  # one word of the shell, as it was given
            words.append(f"{flag}={shlex.join(value)}")
        elif value is True:
            words.append(flag)
        elif isinstance(value, dict):
            words += [f"{flag}={k}={','.join(v) if isinstance(v, tuple) else v}" for k, v in value.items()]
        elif isinstance(value, tuple):
            words += [flag, ",".join(map(str, value))]
        else:
            words += [flag, str(value)]
    if not d.hosts and not d.hostfile and not d.oversubscribe and max(d.rank_counts or (2,)) > local_cores():
        words.append("--oversubscribe")  # as the tune was started (the check of room asks for it)
    return shlex.join(words)
