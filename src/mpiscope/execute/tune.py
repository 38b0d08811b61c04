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
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from mpiscope.analysis.tune import MARGIN, choose, judge, to_measure
from mpiscope.analysis.tunefile import Tuning, bands, environment, mpich_tree, ompi_classic, ompi_json, \
    ompi_uses_json, render
from mpiscope.store.atomic import write_atomic
from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.execute.part import Target
from mpiscope.launchers.placement import Placement
from mpiscope.mpi.collectives import DEFAULT, Algorithm, discover, mpich_default_tree, vendor_of
from mpiscope.plan.engine import Part, make_plan
from mpiscope.plan.schedule import LaunchPolicy
from mpiscope.execute.session import Measurement, Session
from mpiscope.store.runs import Run

STATE, RESULT = "state.json", "tune.json"


@dataclass
class TuneSpec:
    """What a tune measures; kept in state.json, so that --resume needs nothing else."""
    mpi: str | None
    collectives: list[str]
    ranks: list[int]
    sizes: str
    rounds: int = 4  # launches per algorithm and size at most
    verify_launches: int = 3
    max_time: float = 0.2  # engine cap per point and launch, seconds
    race: bool = True  # False: every algorithm at every size in every round (the exhaustive sweep)
    only: dict[str, list[str]] = field(default_factory=dict)  # collective -> algorithms to race
    launcher_args: list[str] = field(default_factory=list)
    placement: dict[str, Any] = field(default_factory=dict)
    margin: float = MARGIN


def _placement(spec: TuneSpec) -> Placement:
    from mpiscope.launchers.placement import make_placement
    return make_placement(**spec.placement)


class Tune:
    """One tune in its directory."""

    def __init__(self, directory: Path, spec: TuneSpec, target: Target, session: Session):
        self.dir, self.spec, self.target, self.session = directory, spec, target, session
        self.vendor = vendor_of(target.lib)
        self.state = self._load_state()

    # -- state ---------------------------------------------------------------------------------
    def _load_state(self) -> dict:
        path = self.dir / STATE
        return json.loads(path.read_text()) if path.is_file() else {"spec": asdict(self.spec), "failed": {}}

    def save(self) -> None:
        write_atomic(self.dir / STATE, json.dumps(self.state, indent=1))

    # -- what the library offers --------------------------------------------------------------
    def choices(self) -> tuple[dict[str, list[Algorithm]], dict[str, str], dict[str, str]]:
        """Per collective the algorithms to race (the default first); the collectives the library
        cannot be told about, and the algorithms tune leaves out, each with the reason."""
        found = discover(self.target.lib, tuple(self.spec.collectives))
        racing, cannot, left_out = {}, {}, {}
        for coll, ch in found.items():
            left_out.update({f"{coll} {name}": why for name, why in ch.left_out.items()})
            if ch.why_not:
                cannot[coll] = ch.why_not
                continue
            wanted = self.spec.only.get(coll)
            algs = [ch.get(n) for n in wanted if n != DEFAULT] if wanted else list(ch.algorithms)
            racing[coll] = [Algorithm(DEFAULT)] + algs
        if not racing:
            raise UsageError(f"{self.target.lib.name} offers no choice of algorithm for "
                             f"{', '.join(self.spec.collectives)}: " + "; ".join(f"{c}: {w}" for c, w in cannot.items()))
        return racing, cannot, left_out

    # -- the race ------------------------------------------------------------------------------
    def _part(self, coll: str, alg: Algorithm, ranks: int, sizes: list[int] | None, launch: int,
              env: dict[str, str] | None = None, tag: dict | None = None) -> Part:
        plan, _ = make_plan(self.target.engine, [coll], ranks,
                            sizes=None if sizes is None else ",".join(map(str, sizes)), max_time=self.spec.max_time)
        return Part(plan, dict(alg.env if env is None else env), tuple(self.spec.launcher_args), _placement(self.spec),
                    {"collective": coll, "algorithm": alg.name, **(tag or {}), "launch": launch})

    def sizes(self, coll: str, ranks: int) -> list[int]:
        from mpiscope.plan.engine import engine_plan
        plan, _ = make_plan(self.target.engine, [coll], ranks, sizes=self.spec.sizes if coll != "barrier" else None,
                            max_time=self.spec.max_time)
        return sorted({e.size for e in engine_plan(self.target.engine, plan).points if not e.skip})

    def race_run(self, racing: dict[str, list[Algorithm]]) -> Run:
        """Rounds of one launch per running algorithm until every point's race is over."""
        run = self._run("race")
        if run is not None:
            self.session.resume(run)  # the part Ctrl-C cut short is finished first
        rng = random.Random()
        for r in range(self.spec.rounds):
            parts = []
            samples = launch_medians(run.records().points if run else [])
            for coll, algs in racing.items():
                for n in self.spec.ranks:
                    todo = self._round(coll, algs, n, samples, r)
                    parts += [self._part(coll, alg, n, sizes, r) for alg, sizes in todo]
            if not parts:
                break
            rng.shuffle(parts)  # the algorithms of a round in a random order
            if run is None:  # the run begins with the round's first part
                run, out = self.session.run(self._one(parts[0], "race"), announce=self._announce("race"))
                self._failed(parts[0], out, run)
                parts = parts[1:]
            self._measure(run, parts)
        if run is None:
            raise UsageError("nothing to race: no collective has a size to measure at these ranks")
        return run

    def _round(self, coll: str, algs: list[Algorithm], n: int, samples: dict, r: int) -> list[tuple[Algorithm, list]]:
        """The algorithms (with their sizes) that race in round `r` at `n` ranks."""
        sizes = self.sizes(coll, n)
        running: dict[str, list[int]] = {}
        usable = [a for a in algs if f"{coll}|{n}|{a.name}" not in self.state["failed"]]
        for size in sizes:
            at = {a.name: samples.get((coll, n, size, a.name), []) for a in usable}
            for name in to_measure(at, r, self.spec.margin, self.spec.race):
                running.setdefault(name, []).append(size)
        return [(a, running[a.name] if coll != "barrier" else None) for a in usable if a.name in running]

    def _one(self, part: Part, what: str, keep_going: bool = True) -> Measurement:
        """A run of parts already numbered by launch (one launch each, as given)."""
        return Measurement(self.target, [part], factors={"tune": what}, keep_going=keep_going,
                           policy=LaunchPolicy(count=1))

    def _announce(self, name: str):
        def keep(run: Run) -> None:  # written down before the first launch: --resume finds it
            self.state[name] = str(run.path)
            self.save()
        return keep

    def _measure(self, run: Run, parts: list[Part]) -> None:
        for part in parts:
            self._failed(part, self.session.add_parts(run, self.target, [part]), run)

    def _failed(self, part: Part, out, run: Run) -> None:
        """An algorithm whose launch failed leaves the race with the reason (the library's last
        words, e.g. MPICH's "User set collective algorithm is not usable"); Ctrl-C ends the tune."""
        if out.status == "interrupted":
            raise KeyboardInterrupt
        if out.status != "ok":
            from mpiscope.execute.session import stderr_tail
            said = [ln.strip() for ln in stderr_tail(run, 40) if re.search(r"not usable|error|Error|fault", ln)]
            why = (out.error or out.status).splitlines()[0].split("; see the launcher")[0]
            key = f"{part.tag['collective']}|{part.plan.ranks}|{part.tag['algorithm']}"
            self.state["failed"][key] = (why + (f": {said[-1]}" if said else ""))[:300]
            self.save()

    def _run(self, name: str) -> Run | None:
        path = self.state.get(name)
        return Run(Path(path)) if path and Path(path).is_dir() else None

    # -- the decision and the file -------------------------------------------------------------
    def decide(self, racing: dict[str, list[Algorithm]], run: Run) -> tuple[Tuning, list[dict]]:
        samples = launch_medians(run.records().points)
        tuning = Tuning(self.vendor, self.target.lib.version)
        rows = []
        for coll, algs in racing.items():
            by_name = {a.name: a for a in algs}
            for n in self.spec.ranks:
                chosen = []
                for size in self.sizes(coll, n):
                    at = {a: samples[(coll, n, size, a)] for a in by_name if (coll, n, size, a) in samples}
                    if DEFAULT not in at:
                        continue
                    c = choose(at, DEFAULT, self.spec.margin)
                    alg = by_name[c.algorithm]
                    chosen.append((size, alg.name, alg.json_name or alg.value))
                    rows.append({"collective": coll, "ranks": n, "size": size, "chosen": c.algorithm,
                                 "leader": c.leader, "launches": {a: len(v) for a, v in at.items()},
                                 "race_ratio": asdict(c.against_default) if c.against_default else None})
                if chosen:
                    tuning.rules.setdefault(coll, {})[n] = bands(chosen)
        if not tuning.rules:
            raise MpiscopeError("the default algorithm was measured nowhere (its launches failed): see the race run's "
                                "stderr.txt")
        return tuning, rows

    def file_path(self) -> Path:
        json_file = self.vendor == "mpich" or ompi_uses_json(self.target.lib.version)
        return self.dir / ("tuning.json" if json_file else "tuning.conf")

    def write(self, tuning: Tuning) -> tuple[Path, str]:
        tree = mpich_default_tree(self.target.lib) if self.vendor == "mpich" else None
        text, fmt = render(tuning, tree)
        path = self.file_path()
        write_atomic(path, text)
        return path, fmt

    # -- proof ---------------------------------------------------------------------------------
    def canary(self, tuning: Tuning) -> dict:
        """A copy of the file whose first tuned band names an algorithm the library does not have:
        a library that reads the file refuses it (the job fails); one that ignores it runs."""
        coll, n, band = next((c, n, b) for c, by in tuning.rules.items() for n, bs in by.items() for b in bs
                             if b.algorithm != DEFAULT)
        bad = Tuning(tuning.library, tuning.version,
                     {coll: {n: [replace(b, value="97" if tuning.library == "openmpi" else "MPIR_No_such_algorithm")
                                 if b is band else b for b in tuning.rules[coll][n]]}})
        if tuning.library == "mpich":
            text = json.dumps(mpich_tree(bad, mpich_default_tree(self.target.lib)))
        else:
            text = json.dumps(ompi_json(bad)) if ompi_uses_json(tuning.version) else ompi_classic(bad)
        path = self.dir / ("canary" + self.file_path().suffix)
        write_atomic(path, text)
        # a measured size inside the band: the band's lower edge itself may round down (the engine
        # counts whole elements) into the band below, which keeps the default
        size = min(s for s in self.sizes(coll, n) if s >= band.low) if coll != "barrier" else None
        part = self._part(coll, Algorithm("canary"), n, [size] if size else None, 0,
                          env=environment(tuning.library, path), tag={"check": "canary"})
        run, out = self.session.run(self._one(part, "canary", keep_going=False))
        if out.status == "interrupted":
            raise KeyboardInterrupt
        refused = out.status == "failed"
        return {"collective": coll, "ranks": n, "size": size, "file": str(path), "run": str(run.path),
                "refused": refused, "error": (out.error or "").splitlines()[0][:300] if out.error else None}

    def verify(self, racing: dict[str, list[Algorithm]], path: Path, tuning: Tuning) -> tuple[Run, list[dict]]:
        """The default against the file, side by side in the same launches (shuffled)."""
        env = environment(tuning.library, path)
        rng = random.Random()
        parts = []
        for k in range(self.spec.verify_launches):
            launch = []
            for coll in tuning.rules:
                for n in tuning.rules[coll]:
                    sizes = self.sizes(coll, n) if coll != "barrier" else None
                    launch += [self._part(coll, Algorithm(DEFAULT), n, sizes, k, tag={"side": "default"}),
                               self._part(coll, Algorithm("tuned"), n, sizes, k, env=env, tag={"side": "tuned"})]
            rng.shuffle(launch)
            parts += launch
        run = self._run("verify")
        if run is None:
            m = Measurement(self.target, parts, factors={"tune": "verify"}, policy=LaunchPolicy(count=1))
            run, out = self.session.run(m, announce=self._announce("verify"))
        else:
            out = self.session.resume(run)
        if out is not None and out.status == "interrupted":
            raise KeyboardInterrupt
        if out is not None and out.status != "ok":
            raise MpiscopeError(f"the side-by-side run of the default against {path} failed: {out.error} "
                                f"(run kept in {run.path})")
        samples = launch_medians(run.records().points, key="side")
        rows = []
        for coll, by in tuning.rules.items():
            for n, bs in by.items():
                for size in self.sizes(coll, n):
                    d, t = samples.get((coll, n, size, "default")), samples.get((coll, n, size, "tuned"))
                    if d and t:
                        band = [b for b in bs if b.low <= size][-1]
                        rows.append({"collective": coll, "ranks": n, "size": size, "algorithm": band.algorithm,
                                     **asdict(judge(d, t, self.spec.margin))})
        return run, rows


def launch_medians(points, key: str = "algorithm") -> dict[tuple, list[float]]:
    """(collective, ranks, size, tag[key]) -> the launch medians of the point, in launch order."""
    out: dict[tuple, list[float]] = {}
    for p in sorted(points, key=lambda p: p.tag.get("launch", 0)):
        if "collective" in p.tag and p.median:
            out.setdefault((p.tag["collective"], p.ranks, p.size, p.tag.get(key)), []).append(p.median)
    return out


def cost(run: Run, spec: TuneSpec, racing: dict[str, list[Algorithm]], sizes: dict[tuple, list[int]],
         seconds: float) -> dict:
    """What the race measured against measuring every algorithm at every size in every round."""
    points = [p for p in run.records().points if "collective" in p.tag]
    measured = len(points)
    exhaustive = sum(len(algs) * len(sizes[(c, n)]) * spec.rounds for c, algs in racing.items() for n in spec.ranks)
    # a launch costs its start-up whatever it measures: the launches matter as much as the points
    launches = len({(p.tag["collective"], p.ranks, p.tag["algorithm"], p.tag.get("launch")) for p in points})
    exh_launches = sum(len(algs) * spec.rounds for algs in racing.values()) * len(spec.ranks)
    return {"launches": launches, "exhaustive_launches": exh_launches, "point_launches": measured,
            "exhaustive_point_launches": exhaustive,
            "share": measured / exhaustive if exhaustive else None, "seconds": seconds,
            # launches, not points, set the time (each launch's start-up dwarfs a point's samples)
            "exhaustive_seconds_estimate": seconds * exh_launches / launches if launches else None}


def tune(directory: Path, spec: TuneSpec, target: Target, session: Session) -> dict:
    """The whole tune; its result (also written as tune.json in `directory`)."""
    t = Tune(directory, spec, target, session)
    racing, cannot, left_out = t.choices()
    started = time.monotonic()
    run = t.race_run(racing)
    seconds = time.monotonic() - started + t.state.get("race_seconds_before", 0.0)
    t.state["race_seconds_before"] = seconds
    t.save()
    sizes = {(c, n): t.sizes(c, n) for c in racing for n in spec.ranks}
    tuning, decisions = t.decide(racing, run)
    path, fmt = t.write(tuning)
    result: dict[str, Any] = {
        "library": f"{target.lib.vendor} {target.lib.version}", "mpi": target.lib.name, "file": str(path),
        "format": fmt, "env": environment(tuning.library, path), "race_run": str(run.path),
        "cannot": cannot, "left_out": left_out, "failed": t.state["failed"], "decisions": decisions,
        "algorithms": {c: [a.name for a in algs] for c, algs in racing.items()},
        "bands": {c: {str(n): [asdict(b) for b in bs] for n, bs in by.items()} for c, by in tuning.rules.items()},
        "cost": cost(run, spec, racing, sizes, seconds), "changes": tuning.changes()}
    if tuning.changes():
        result["canary"] = t.canary(tuning)
        if not result["canary"]["refused"]:
            result["error"] = (f"{target.lib.name} ignored {path}: a copy naming an algorithm it does not have ran "
                               f"without complaint, so the library does not read this file (format or variable "
                               f"not honoured by {target.lib.vendor} {target.lib.version})")
        else:
            vrun, result["verify"] = t.verify(racing, path, tuning)
            result["verify_run"] = str(vrun.path)
            result["evidence"] = evidence(result["verify"])
    write_atomic(directory / RESULT, json.dumps(result, indent=1, default=str))
    return result


def evidence(verify: list[dict]) -> str:
    """What the side-by-side says about the file's effect where it changes the algorithm; the
    points where the file keeps the default run the same algorithm on both sides, so a verdict
    other than same or inconclusive there is a false one: their count says how far to trust
    the others."""
    changed = [v for v in verify if v["algorithm"] != DEFAULT]
    faster = [v for v in changed if v["verdict"] == "faster"]
    slower = [v for v in changed if v["verdict"] == "slower"]
    text = (f"where the file changes the algorithm ({len(changed)} points), the tuned run was faster at "
            f"{len(faster)}, slower at {len(slower)}, the same or inconclusive at {len(changed) - len(faster) - len(slower)}")
    if changed and not faster:
        text += ": no measured gain (the race's lead did not hold, or the machine's noise hides it): measure again"
    controls = [v for v in verify if v["algorithm"] == DEFAULT]
    false = [v for v in controls if v["verdict"] in ("faster", "slower")]
    if controls:
        text += (f"; where both sides run the default ({len(controls)} points, a control), {len(false)} "
                 f"differ{'s' if len(false) == 1 else ''}")
        if false:
            text += ": the machine's noise between launches makes verdicts unreliable, measure on a quieter machine"
    return text


def load_spec(directory: Path) -> TuneSpec:
    path = directory / STATE
    try:
        return TuneSpec(**json.loads(path.read_text())["spec"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{directory} holds no tune to resume ({path}: {e}): give the directory a tune printed") from e

