"""The machine-state control's noise and what it separates (issue 44; figures, not a test).

Runs of `mpiscope run -b pingpong --sizes 64 --launches 3`, alternating a quiet machine with one
under a background load this bench starts and stops itself (4 busy processes on the 2 cores),
then per run: each piece of the control (its launches' medians, the run's level), the pingpong's
64 B launch medians beside it, and per piece the control's within-launch spread (log SD of its
repetitions), its between-launch spread within a run (log SD of the launch medians) and its
between-run spread (log SD of the run levels), quiet and loaded; and every pair of runs compared
with and without the control's rule (one configuration throughout: a slower or faster is false).

    python bench/control/run.py [--runs 10] [--load 4] [--keep DIR]
    python bench/control/run.py --tally DIR      (the runs a --keep kept, tallied again)
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from mpiscope.records.model import Control, Point
from mpiscope.records.reader import read_records
from mpiscope.results.compare import compare_runs
from mpiscope.results.control import NAMES, PIECES, RECORDED, control_shift, run_control
from mpiscope.results.launches import PRIOR_DRIFT


def _busy() -> None:
    while True:
        pass


def _run(runs_dir: Path) -> str:
    for _ in range(3):  # a shared tree: a failed start is retried, and said
        r = subprocess.run([sys.executable, "-m", "mpiscope", "run", "-b", "pingpong", "--sizes", "64", "--launches",
                            "3", "--runs-dir", str(runs_dir), "--no-report"], capture_output=True, text=True)
        if r.returncode == 0:
            return sorted(p for p in runs_dir.iterdir() if p.is_dir())[-1].name
        print(f"run failed ({r.returncode}): {r.stderr.strip()[-300:]}", flush=True)
    raise SystemExit("mpiscope run failed three times")


def measure(runs_dir: Path, runs: int, load: int) -> None:
    """2 x `runs` runs, quiet and loaded alternately; which was which kept in runs_dir/bench.json."""
    kinds = []
    for i in range(2 * runs):
        loaded = i % 2 == 1
        procs = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(load if loaded else 0)]
        for p in procs:
            p.start()
        try:
            avg = os.getloadavg()[0]
            run_id = _run(runs_dir)
        finally:
            for p in procs:
                p.terminate()
                p.join()
        kinds.append({"run": run_id, "loaded": loaded, "load": avg})
        (runs_dir / "bench.json").write_text(json.dumps(kinds, indent=1))
        print(f"{'loaded' if loaded else 'quiet '} load {avg:4.1f} {run_id}", flush=True)


def tally(runs_dir: Path) -> None:
    """Per run its control and its 64 B estimate; per piece the spreads, quiet and loaded; and
    every pair of runs compared with and without the control's rule (all runs measure one
    configuration: every slower or faster is false)."""
    kinds = json.loads((runs_dir / "bench.json").read_text())
    rows = []
    for k in kinds:
        records = read_records(runs_dir / k["run"] / "records.jsonl").records
        rows.append((k["loaded"], k["load"], run_control(records, k["run"]), records))
    for loaded, load, rc, records in rows:
        ping = [p.median for p in records if isinstance(p, Point) and p.size == 64]
        levels = {NAMES[p]: f"{v.level:.3g}" for p, v in rc.levels.items()} if rc else {}
        spent = [c.elapsed_s for c in records if isinstance(c, Control)]
        print(f"{'loaded' if loaded else 'quiet '} load {load:4.1f}  {levels}  control {1e3 * max(spent):.0f} ms at most;"
              f"  pingpong 64 B " + " ".join(f"{x:.3g}" for x in ping))
    for loaded in (False, True):
        mine = [r for r in rows if r[0] == loaded and r[2] is not None]
        print(f"\n{'loaded' if loaded else 'quiet'} ({len(mine)} runs, load {np.median([r[1] for r in mine]):.1f})")
        for piece in RECORDED:
            lv = [r[2].levels[piece] for r in mine if piece in r[2].levels]
            if not lv:
                continue
            within = np.median([x.within for x in lv])
            between = np.median([x.between() for x in lv])
            runs = np.std(np.log([x.level for x in lv]), ddof=1) if len(lv) > 1 else float("nan")
            print(f"  {NAMES[piece]:19s} level {np.median([x.level for x in lv]):7.3g} us (runs "
                  f"{min(x.level for x in lv):.3g}-{max(x.level for x in lv):.3g}); log SD within a launch "
                  f"{within:.3f}, between launches of its main state {between:.3f}, between runs {runs:.3f}"
                  + ("" if piece in PIECES else "  (the library's configuration changes it)"))
    pairs = [(a, b) for i, a in enumerate(rows) for b in rows[i + 1:]]
    counts = {"without": [0, 0], "with": [0, 0, 0]}
    for a, b in pairs:
        base, cand = [r for r in a[3] if isinstance(r, Point)], [r for r in b[3] if isinstance(r, Point)]
        shift = control_shift(a[2], b[2])
        plain = compare_runs([base], [cand], fallback=PRIOR_DRIFT)
        ruled = compare_runs([base], [cand], fallback=PRIOR_DRIFT, shift=shift)
        counts["without"][0] += sum(pc.verdict in ("slower", "faster") for pc in plain)
        counts["without"][1] += len(plain)
        counts["with"][0] += sum(pc.verdict in ("slower", "faster") for pc in ruled)
        counts["with"][1] += len(ruled)
        counts["with"][2] += sum(bool(pc.state) for pc in ruled)
    n = counts["without"][1]
    print(f"\n{len(pairs)} pairs of runs of one configuration, 64 B: false slower/faster without the control "
          f"{counts['without'][0]}/{n}, with it {counts['with'][0]}/{n} "
          f"({counts['with'][2]} inconclusive: the machine's state differs)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10, help="runs of each kind")
    ap.add_argument("--load", type=int, default=4, help="busy processes in a loaded run")
    ap.add_argument("--keep", help="keep the runs here")
    ap.add_argument("--tally", metavar="DIR", help="only tally the runs kept in DIR")
    a = ap.parse_args()
    if a.tally:
        tally(Path(a.tally))
        return
    runs_dir = Path(a.keep or tempfile.mkdtemp(prefix="control-"))
    runs_dir.mkdir(parents=True, exist_ok=True)
    measure(runs_dir, a.runs, a.load)
    tally(runs_dir)


if __name__ == "__main__":
    main()
