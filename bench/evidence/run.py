"""Do `compare`'s verdicts and the intervals answer on a machine whose state changes? (issues 28
and 44; figures, not a test)

Real runs on each MPI library, under loads this bench starts and stops itself: quiet; half a
core (a process busy half of every 100 ms); four busy processes on two cores; and a moving load
(one busy process during some runs only: the second and the perturbed of the runs measured apart,
and on and off every few seconds during an interleaved session). Per load:

* measured apart (separate `mpiscope run`s): same against same, and a perturbed run against the
  first (MPICH: MPIR_CVAR_CH4_CMA_ENABLE=0, large messages copied twice; Open MPI:
  OMPI_MCA_btl_sm_eager_limit=256);
* interleaved (one `mpiscope run --vs` session: the configuration, itself again, the perturbed):
  the same two comparisons, paired by block, with the session's second stage (the points its look
  left undecided, measured in as many blocks again; each look at the two-look level);
* for both: the share of same-against-same points called slower or faster (target <= 5 %),
  and of the points the perturbation moves by 50 % or more, the share called slower (faster, for
  a speed-up: power, target >= 90 % interleaved) and the share called same (target 0). Which
  points it moves is decided per MPI, benchmark and size by the median change over every
  comparison of them (all loads, both ways of measuring), not by each comparison's own
  estimate, which on a noisy machine moves by 50 % by chance alone; each such point is named
  with its changes' range;
* the control: each run's level (its first piece, µs), its launches flagged as a state switch,
  and the verdicts it protected ("inconclusive: the machine's state differs");
* coverage: the first run's interval contains the second's estimate (target >= 80 %), with the
  median relative half-width beside it and the points with no interval counted and named
  (among them "two machine states": the run met both, and its interval over both is wider than
  2x; and "one machine state": the machine's history holds a state the run did not meet,
  results.states; the bench keeps a history of its own beside its runs, which starts empty, unless
  MPISCOPE_MACHINE_STATES names one); and of those pairs, the ones whose controls say the machine's state differs (the MPI
  pingpong deciding too, the two runs being one configuration);
* false hangs: N runs (`mpiscope run` with its defaults unless --hang-args) under four busy
  processes, each beside a quiet run of the same command (alternated, so that other work on the
  machine falls on both), each run's time against its quiet run's, and the points recorded hung
  and slowed (target 0 hung, each run within twice its quiet time).

It uses only `mpiscope run` and the Python API, so the same file runs on the code before and
after a change (PYTHONPATH=OLD/src python bench/evidence/run.py). `--quick` is a smoke of a few
minutes: one MPI, one repeat, one hang run of a short command.

    python bench/evidence/run.py [--mpi embedded,openmpi] [--loads quiet,half,four,moving]
        [--repeats N] [--launches N] [--hang-runs N] [--hang-args ARGS] [--quick] [--keep DIR]
    python bench/evidence/run.py --reanalyse DIR   # the cells a --keep DIR holds, analysed again
        # (after the full tables, before and after: the interleaved verdicts of the first stage
        # alone, at one look's level, against the whole session's; coverage with the intervals of
        # a run that met one of the machine's states printed, against named)
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np


from mpiscope import api
from mpiscope.results.compare import PointChange, compare_runs
from mpiscope.results.control import control_shift, run_control
from mpiscope.results.evidence import UNMET
from mpiscope.results.history import same_configuration
from mpiscope.results.points import launch_of
from mpiscope.results.policy import POLICY, Policy
from mpiscope.results.sides import STAGES, compare_sides, interleaved_blocks
from mpiscope.results.table import unmeasured

PERTURB = {"embedded": "MPIR_CVAR_CH4_CMA_ENABLE=0", "openmpi": "OMPI_MCA_btl_sm_eager_limit=256"}
SAME = "MPISCOPE_EVIDENCE_SAME=1"  # a variable nothing reads: the configuration against itself
LOADS = ("quiet", "half", "four", "moving")


def _busy(stop: "multiprocessing.synchronize.Event", duty: float) -> None:
    """Busy `duty` of every 100 ms until told to stop."""
    while not stop.is_set():
        end = time.monotonic() + 0.1 * duty
        while time.monotonic() < end:
            pass
        if duty < 1:
            time.sleep(0.1 * (1 - duty))


class Load:
    """`n` busy processes at `duty`, started and stopped by this bench (n = 0: none)."""

    def __init__(self, n: int = 0, duty: float = 1.0) -> None:
        self.n, self.duty, self.procs = n, duty, []

    def __enter__(self) -> "Load":
        self.stop = multiprocessing.Event()
        self.procs = [multiprocessing.Process(target=_busy, args=(self.stop, self.duty), daemon=True)
                      for _ in range(self.n)]
        for p in self.procs:
            p.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for p in self.procs:
            p.join(5)
            if p.is_alive():
                p.kill()


class Moving:
    """One busy process on for `period` seconds, off for `period`, and so on, until left."""

    def __init__(self, period: float) -> None:
        self.period = period

    def _toggle(self) -> None:
        while not self.done.is_set():
            with Load(1):
                self.done.wait(self.period)
            self.done.wait(self.period)

    def __enter__(self) -> "Moving":
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._toggle, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(self.period + 10)


def load_of(name: str) -> Load:
    """The steady part of a load (the moving load is quiet but for the runs that carry it)."""
    return {"quiet": Load(), "half": Load(1, 0.5), "four": Load(4), "moving": Load()}[name]


def mpiscope_run(args: list[str], runs_dir: Path, timeout: float = 3600) -> tuple[list[str], str, float]:
    """`mpiscope run ARGS`: the runs it saved, its output, its wall-clock time."""
    cmd = [sys.executable, "-m", "mpiscope", "run", *args, "--no-report", "--no-progress", "--runs-dir", str(runs_dir)]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=timeout)
    took = time.monotonic() - t0
    saved = re.findall(r"saved in (\S+)", done.stdout)
    if done.returncode not in (0, 1) or not saved:
        sys.exit(f"mpiscope run {shlex.join(args)} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return saved, done.stdout, took


def points(run: str, unmet_printed: bool = False) -> dict[tuple, tuple[float, float, float, str]]:
    """Per (benchmark, size): (estimate, interval low, interval high, why none is printed), the
    interval NaN where `show`, the report and the headline print none: no interval, or one the
    evidence column names instead ("machine busy: ...", "insufficient evidence: ..."). With
    `unmet_printed`, the interval of a run that met one of the machine's states is taken as
    printed (the rule before results.states)."""
    out = {}
    for _, r in api.table(run).iterrows():
        low, high, why = r.get("time_ci_low_us"), r.get("time_ci_high_us"), str(r.get("evidence") or "")
        if unmet_printed and why.startswith(UNMET):
            why = ""
        if low is None or high is None or why:
            low = high = float("nan")
            why = why.split(":")[0] or "no interval"
        out[(r["benchmark"], int(r["size"]))] = (float(r["time_median_us"]), float(low), float(high), why)
    return out


def first_stage(base: str, cand: str) -> list[PointChange] | None:
    """Two runs of one `run --vs` session compared on the blocks before its second stage's look,
    at one look's level: what the session would have answered without the second stage (None
    when it had none)."""
    (b,), (c,) = api.compare_side(base), api.compare_side(cand)
    blocks = interleaved_blocks([b], [c])
    stages = [run.meta().extra["interleave"].get(STAGES) for run in (b, c)]
    if blocks is None or not all(stages):
        return None
    kept = [{launch: k for launch, k in side.items() if k < stages[0]["first"]} for side in blocks]
    points = [[p for p in run.records().points if launch_of(p) in side] for run, side in zip((b, c), kept)]
    return compare_runs([points[0]], [points[1]], POLICY.alpha, POLICY.margin, blocks=(kept[0], kept[1]))


class Tally:
    def __init__(self, policy: Policy = POLICY, one_stage: bool = False, unmet_printed: bool = False) -> None:
        self.policy = policy  # the verdicts' and the control's
        self.one_stage = one_stage  # interleaved: the first stage alone (`first_stage`), the rule before
        self.unmet_printed = unmet_printed  # coverage: "one machine state" intervals printed (`points`), the rule before
        self.same = defaultdict(lambda: defaultdict(int))   # (load, how) -> verdict -> points
        self.planted: list[tuple[str, str, str, tuple, float, str, bool]] = []  # load, how, mpi, point, change, verdict, busy
        # load -> [hits, pairs, why none -> points, half-widths, hits and pairs where the next run's point is not busy]
        self.cover = defaultdict(lambda: [0, 0, defaultdict(list), [], 0, 0])
        self.controls: list[tuple[str, str, str, str, int, int]] = []  # load, how, role, run, level, switched
        self.protected = defaultdict(int)                   # (load, how) -> verdicts the control protected
        # load -> [hits, pairs, half-widths] of the pairs whose controls say the state differs
        self.other_state = defaultdict(lambda: [0, 0, []])
        self.second_stage = defaultdict(int)                # (load, how) -> comparisons with a second stage

    def compare(self, load: str, how: str, mpi: str, base: str, cand: str, planted: bool) -> None:
        """`api.compare`'s verdicts (history auto), under this tally's policy."""
        sides = api.compare_side(base), api.compare_side(cand)
        changes = first_stage(base, cand) if self.one_stage and how == "interleaved" else None
        if changes is None:
            changes = compare_sides(*sides, POLICY.alpha, POLICY.margin, policy=self.policy)
        self.second_stage[(load, how)] += bool(STAGES in (sides[1][0].meta().extra.get("interleave") or {}))
        for pc in changes:
            self.protected[(load, how)] += bool(pc.state)
            if not planted:
                self.same[(load, how)][pc.verdict] += 1
            else:
                self.planted.append((load, how, mpi, (pc.benchmark, pc.size), pc.change, pc.verdict, bool(pc.busy)))

    def moved(self) -> tuple[dict, dict, dict]:
        """(load, how) -> verdict counts ("right": slower for a slowdown, faster for a speed-up)
        over the comparisons of the points the perturbation moves by >= 50 % (their median change
        over every comparison) where neither side was "machine busy"; the same for the busy ones
        (most launches of a side disturbed: the product answers inconclusive there by design, so
        they are counted apart, not in the power); and those points with their changes' range."""
        changes = defaultdict(list)
        for _, _, mpi, point, change, *_ in self.planted:
            changes[(mpi, point)].append(change)
        moving = {k: float(np.median(v)) for k, v in changes.items() if abs(np.median(v)) >= 0.5}
        out = defaultdict(lambda: defaultdict(int))
        busy = defaultdict(lambda: defaultdict(int))
        for load, how, mpi, point, _, verdict, was_busy in self.planted:
            if (mpi, point) in moving:
                right = verdict == ("slower" if moving[(mpi, point)] > 0 else "faster")
                (busy if was_busy else out)[(load, how)]["right" if right else verdict] += 1
        return out, busy, {k: (min(changes[k]), max(changes[k])) for k in moving}

    def coverage(self, load: str, first: str, second: str) -> None:
        """The first run's printed intervals against the second's estimates, every pair; those
        whose controls say the machine's state differs are also counted apart (`other_state`)."""
        pa, pb = points(first, self.unmet_printed), points(second)
        (va,), (vb,) = api.compare_side(first), api.compare_side(second)
        shift = control_shift(run_control(va.records(), va.id), run_control(vb.records(), vb.id), self.policy,
                              same_configuration([va], [vb]), states=True)  # as `compare` reads two runs
        other = shift is not None and shift.shifted
        c, o = self.cover[load], self.other_state[load]
        for key, (m, lo, hi, why) in pa.items():
            if key not in pb:
                continue
            if not np.isfinite(hi - lo):
                c[2][why].append(key)
                continue
            hit = bool(lo <= pb[key][0] <= hi)
            c[0] += hit
            c[1] += 1
            c[3].append((hi - lo) / 2 / m)
            if pb[key][3] not in ("machine busy", "shorter than the clocks agree"):
                c[4] += hit
                c[5] += 1
            if other:
                o[0] += hit
                o[1] += 1
                o[2].append((hi - lo) / 2 / m)

    def control(self, load: str, how: str, role: str, run: str) -> None:
        (view,) = api.compare_side(run)
        rc = run_control(view.records(), view.id)
        if rc is None or not rc.levels:
            self.controls.append((load, how, role, view.id, "-", 0))
            return
        # the handoff and the MPI pingpong tell the machine's states apart here (docs/statistics.md)
        shown = [(k, v) for k, v in rc.levels.items() if k in ("handoff_us", "mpi_pingpong_us")] or \
            [next(iter(rc.levels.items()))]
        self.controls.append((load, how, role, view.id, ", ".join(f"{k} {v.level:.3g}" for k, v in shown),
                              len(rc.switched(self.policy))))


def cell(a: argparse.Namespace, mpi: str, runs_dir: Path, load: str, tally: Tally) -> None:
    """Measured apart: A1, A2 (same) and P (perturbed), the moving load during A2 and P; then one
    interleaved session of the configuration, itself again and the perturbed."""
    base = ["--mpi", mpi, "-n", "2", "-b", a.bench, "--sizes", a.sizes, "--launches", str(a.launches)]
    moving = Load(1) if load == "moving" else Load()
    with load_of(load):
        (a1,), _, _ = mpiscope_run(base, runs_dir)
        with moving:
            (a2,), _, _ = mpiscope_run(base, runs_dir)
            (p,), _, _ = mpiscope_run([*base, "--env", PERTURB[mpi]], runs_dir)
        with Moving(a.move_period) if load == "moving" else Load():
            saved, _, took = mpiscope_run([*base, "--vs", f"--env {SAME}", "--vs", f"--env {PERTURB[mpi]}"], runs_dir)
    tally_cell(tally, mpi, load, (a1, a2, p), tuple(saved[:3]))
    print(f"  {mpi} {load}: done (the interleaved session {took:.0f} s)", flush=True)


def tally_cell(tally: Tally, mpi: str, load: str, apart: tuple, interleaved: tuple) -> None:
    """One cell's comparisons: each way of measuring's (base, same, perturbed) runs."""
    for how, runs in (("apart", apart), ("interleaved", interleaved)):
        tally.compare(load, how, mpi, runs[0], runs[1], planted=False)
        tally.compare(load, how, mpi, runs[0], runs[2], planted=True)
        for role, run in zip(("base", "same", "planted"), runs):
            tally.control(load, how, role, run)
    tally.coverage(load, apart[0], apart[1])


def reanalyse(kept: Path, tally: Tally) -> None:
    """The cells of a `--keep` directory analysed again (by this file's definitions): each
    MPI-LOAD-REPEAT directory's runs apart in the order they started, and its session's by label."""
    for cell_dir in sorted(p for p in kept.iterdir() if p.is_dir() and p.name.count("-") == 2):
        mpi, load, _ = cell_dir.name.split("-")
        metas = sorted(((json.loads((r / "run.json").read_text()), r) for r in cell_dir.iterdir()
                        if (r / "run.json").is_file()), key=lambda mr: mr[0]["started"])
        apart = tuple(str(r) for m, r in metas if not m.get("interleave"))
        labels = {m["interleave"]["label"]: str(r) for m, r in metas if m.get("interleave")}
        same = next(r for label, r in labels.items() if SAME in label)
        perturbed = next(r for label, r in labels.items() if label not in ("base",) and SAME not in label)
        tally_cell(tally, mpi, load, apart[:3], (labels["base"], same, perturbed))


def hangs(a: argparse.Namespace, runs_dir: Path) -> list[tuple[str, float, float, int, int]]:
    """The hang command `--hang-runs` times under four busy processes, each beside a quiet run of
    its own (alternated quiet-loaded, loaded-quiet, ...: other work on the machine then falls on
    both alike, where one quiet run taken first would be a stored number); per loaded run its id,
    time, its pair's quiet time, points recorded hung and slowed, printed as it ends."""
    args = shlex.split(a.hang_args)
    out = []
    for i in range(a.hang_runs):
        took = {}
        for load in (("quiet", "four") if i % 2 == 0 else ("four", "quiet")):
            with load_of(load):
                (run,), _, took[load] = mpiscope_run(args, runs_dir / f"{load}-{i}")
            if load == "four":
                loaded = run
        gaps = unmeasured(api.compare_side(loaded))
        row = (Path(loaded).name, took["four"], took["quiet"], int((gaps["what"] == "hung").sum()),
               int((gaps["what"] == "slowed").sum()))
        out.append(row)
        print(f"  hang run {i + 1}/{a.hang_runs}: {hang_line(*row)}", flush=True)
    return out


def hang_line(run: str, took: float, quiet: float, hung: int, slowed: int) -> str:
    return f"{run:28} {took:6.0f} s, quiet {quiet:4.0f} s: {took / quiet:4.1f} x, hung {hung}, slowed {slowed}"


def share(d: dict[str, int], *keys: str) -> str:
    total = sum(d.values())
    hit = sum(d.get(k, 0) for k in keys)
    return f"{hit}/{total} ({100 * hit / total:.0f} %)" if total else "-"


def _named(keys: list[tuple]) -> str:
    """'allreduce 1K x3, pingpong 1M': the points, with how often each was."""
    counts = defaultdict(int)
    for bench, size in keys:
        counts[f"{bench} " + (f"{size >> 20}M" if size >= 1 << 20 else f"{size >> 10}K" if size >= 1024 else str(size))] += 1
    return ", ".join(f"{k} x{n}" if n > 1 else k for k, n in sorted(counts.items()))


def report(a: argparse.Namespace, tally: Tally, hung: list, seconds: float) -> None:
    moved, busy, moving = tally.moved()
    print(f"\n{a.mpi}, -b {a.bench} --sizes {a.sizes} --launches {a.launches}, {a.repeats} repeat(s) per load, "
          f"{seconds:.0f} s")
    print(f"\n{'load':8} {'compared':12} {'same vs same: false':>22} {'inconcl.':>14} {'planted >=50%: power':>22} "
          f"{'called same':>13} {'busy: right':>12} {'protected':>10}")
    for load in a.loads:
        for how in ("interleaved", "apart"):
            s, m, b = tally.same[(load, how)], moved[(load, how)], busy[(load, how)]
            print(f"{load:8} {how:12} {share(s, 'slower', 'faster'):>22} {share(s, 'inconclusive'):>14} "
                  f"{share(m, 'right'):>22} {share(m, 'same'):>13} {share(b, 'right'):>12} "
                  f"{tally.protected[(load, how)]:>10}")
    print("\npoints the perturbation moves by 50 % or more (median change over every comparison), their changes' "
          "range, and their verdicts interleaved / apart:")
    for (mpi, (bench, size)), (low, high) in sorted(moving.items()):
        per = {how: defaultdict(int) for how in ("interleaved", "apart")}
        for _, how, m, point, change, verdict, was_busy in tally.planted:
            if (m, point) == (mpi, (bench, size)):
                per[how][verdict + (" (busy)" if was_busy else "")] += 1
        print(f"  {mpi} {bench} {size} B: {1 + low:.2f}-{1 + high:.2f} x; "
              + "; ".join(f"{how} {dict(v)}" for how, v in per.items()))
    print("\ncoverage of the next run's estimate (measured apart), with the median relative half-width:")
    for load in a.loads:
        hits, pairs, none, half, calm_hits, calm = tally.cover[load]
        print(f"  {load:8} {hits}/{pairs} ({100 * hits / max(pairs, 1):.0f} %; where the next run's point is not "
              f"busy {calm_hits}/{calm}), half-width "
              f"{100 * float(np.median(half)) if half else float('nan'):.1f} %; no interval printed: "
              + ("; ".join(f"{why} {len(keys)} ({_named(keys)})" for why, keys in sorted(none.items())) or "none"))
        o_hits, o_pairs, o_half = tally.other_state[load]
        if o_pairs:
            print(f"  {'':8} of them, the next run in another state of the machine (its control): {o_hits}/{o_pairs} "
                  f"({100 * o_hits / o_pairs:.0f} %), half-width {100 * float(np.median(o_half)):.1f} %")
    print("\ncontrol per run (level of its cache-line handoff and MPI pingpong, else its first piece, µs; "
          "launches flagged as a state switch):")
    for load, how, role, run, level, switched in tally.controls:
        print(f"  {load:8} {how:12} {role:8} {run:28} {level:40} switched {switched}")
    if hung:
        print(f"\nfalse hangs, `mpiscope run {a.hang_args}` under four busy processes:")
        print("  (each run beside a quiet run of its own, alternated)")
        for row in hung:
            print(f"  {hang_line(*row)}")
        print(f"  hung points: {sum(h for *_, h, _ in hung)} in {len(hung)} runs; within twice the quiet time: "
              f"{sum(t <= 2 * q for _, t, q, _, _ in hung)}/{len(hung)}")


def before_after(a: argparse.Namespace, before: Tally, after: Tally) -> None:
    """Per load, the interleaved figures the second stage changes, before (the first stage alone,
    at one look's level) -> after (the session, each look at the two-look level): false verdicts
    same against same, power on the points moved by >= 50 % (not busy), and the comparisons
    that had a second stage; apart, unchanged, for reference."""
    def cells(t: Tally, load: str) -> list[str]:
        moved, _, _ = t.moved()
        hits, pairs, _, half, *_ = t.cover[load]
        other = t.other_state[load]
        return [share(t.same[(load, "interleaved")], "slower", "faster"),
                share(t.same[(load, "interleaved")], "same"),
                share(moved[(load, "interleaved")], "right"), share(moved[(load, "interleaved")], "same"),
                f"{t.second_stage[(load, 'interleaved')]} of {2 * a.repeats * len(a.mpi.split(','))}",
                share(t.same[(load, "apart")], "slower", "faster"), share(moved[(load, "apart")], "right"),
                f"{hits}/{pairs} ({100 * hits / max(pairs, 1):.0f} %), half-width "
                f"{100 * float(np.median(half)) if half else float('nan'):.1f} %"]
    heads = ("interleaved: same vs same false", "same vs same called same", "power", "planted called same",
             "comparisons with a 2nd stage", "apart: same vs same false", "apart: power", "coverage where printed")
    print("\nbefore -> after: interleaved, the first stage alone at one look's alpha -> the session with its "
          "second stage (each look at the two-look level); coverage, the intervals of a run that met one of the "
          "machine's states printed -> named instead (\"one machine state\"):")
    for load in a.loads:
        print(f"  {load}:")
        for head, b, c in zip(heads, cells(before, load), cells(after, load)):
            print(f"    {head:32} {b:>18} -> {c}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", default="embedded,openmpi")
    ap.add_argument("--bench", default="pingpong,allreduce")
    ap.add_argument("--sizes", default="8,1K,64K,1M")
    ap.add_argument("--launches", type=int, default=6, help="launches per run (at least 3, to pair by block)")
    ap.add_argument("--loads", default=",".join(LOADS), help="of " + ",".join(LOADS))
    ap.add_argument("--repeats", type=int, default=5, help="comparisons of each kind per load and MPI")
    ap.add_argument("--move-period", type=float, default=5.0, help="seconds on, then off, of the moving load")
    ap.add_argument("--hang-runs", type=int, default=20, help="runs under four busy processes (0: none)")
    ap.add_argument("--hang-args", default="", help="the hang runs' `mpiscope run` flags (default: none, its defaults)")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke of a few minutes: MPICH, pingpong at 8 and 1M, 3 launches, one repeat, one short "
                         "hang run")
    ap.add_argument("--keep", type=Path, help="keep the runs directories here (default: a temporary one)")
    ap.add_argument("--reanalyse", type=Path, metavar="KEPT",
                    help="measure nothing: analyse the cells a --keep directory holds again (its hang runs are not)")
    a = ap.parse_args()
    if a.quick:
        a.mpi, a.bench, a.sizes, a.launches, a.repeats, a.hang_runs = "embedded", "pingpong", "8,1M", 3, 1, 1
        a.hang_args = a.hang_args or "-b pingpong --sizes 8,1K,64K"
    a.loads = a.loads.split(",")
    bad = [x for x in a.loads if x not in LOADS]
    if bad or a.launches < 3 or a.repeats < 1 or a.hang_runs < 0:
        ap.error(f"unknown load {bad[0]}" if bad else "--launches needs 3 or more, --repeats 1 or more")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    tally = Tally()
    t0 = time.monotonic()
    if a.reanalyse:
        reanalyse(a.reanalyse, tally)
        before = Tally(one_stage=True, unmet_printed=True)
        reanalyse(a.reanalyse, before)
        cells = [d.name.split("-") for d in a.reanalyse.iterdir() if d.is_dir() and d.name.count("-") == 2]
        a.mpi = ",".join(sorted({mpi for mpi, _, _ in cells}))
        a.repeats = max(int(r) for _, _, r in cells) + 1 if cells else 0
        a.loads = [x for x in a.loads if any(k[0] == x for k in tally.same)]
        report(a, tally, [], time.monotonic() - t0)
        before_after(a, before, tally)
        return
    with tempfile.TemporaryDirectory(prefix="mpiscope-evidence-") as scratch:
        tmp = Path(a.keep or scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("MPISCOPE_MACHINE_STATES", str(tmp / "machine-states.json"))
        for mpi in a.mpi.split(","):
            for load in a.loads:
                for r in range(a.repeats):
                    cell(a, mpi, tmp / f"{mpi}-{load}-{r}", load, tally)
        hung = hangs(a, tmp / "hangs") if a.hang_runs else []
        before = Tally(one_stage=True, unmet_printed=True)
        reanalyse(tmp, before)
    report(a, tally, hung, time.monotonic() - t0)
    before_after(a, before, tally)


if __name__ == "__main__":
    main()
