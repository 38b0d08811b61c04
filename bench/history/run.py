"""Figures for `mpiscope history` (docs/history.md), not a test.

Scale: synthetic stores of N runs x 100 points (3 launches each, a control per launch), written as
an mpiscope run writes them; `mpiscope history DIR` run as its own process, its wall time and
peak resident memory printed per N.

Ground truth (--truth): real runs of `mpiscope run -n 2 -b pingpong --sizes 8,64K,1M --launches 3`
on this machine, in three fresh runs directories of RUNS runs each: nothing changed (false change
points: goal 0); MPIR_CVAR_CH4_CMA_ENABLE=0 from run 12 (the CMA copy off: 64 KiB and 1 MiB
move by +60 % and more here; goal: found at run 12 within one run, the variable named); and a CPU
load this bench starts only during runs 8-10 (goal: those runs kept apart or no change point);
with other than 20 runs, at the same shares of the series.
--load adds a background load (one process busy half of every 100 ms per core) through every
case. Prints a table of power and false alarms.

    .venv/bin/python bench/history/run.py --scale 100,1000,10000 [--versus OLD/src]
    .venv/bin/python bench/history/run.py --truth --runs 20 [--load] [--keep DIR]
    .venv/bin/python bench/history/run.py --reanalyse DIR/history-truth-XXXX
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

POINTS = [(b, s) for b in ("pingpong", "allreduce", "bcast", "alltoall") for s in (2 ** k for k in range(0, 25))][:100]


def synthetic_store(where: Path, runs: int, step_at: int | None = None) -> None:
    """`runs` runs of 100 points, 3 launches each, 2 % launch spread, 3 % run effect; from run
    `step_at` every point 1.5x slower and MPIR_CVAR_X=1 in the environment."""
    rng = random.Random(48)
    where.mkdir(parents=True, exist_ok=True)
    for i in range(runs):
        d = where / f"r{i:06d}"
        d.mkdir()
        started = f"2026-01-01T00:00:00.{i:06d}Z"
        env = {"MPIR_CVAR_X": "1"} if step_at is not None and i >= step_at else {}
        step = 1.5 if step_at is not None and i >= step_at else 1.0
        effect = rng.gauss(0, 0.03)
        lines = []
        for launch in range(3):
            tag = {"launch": launch, "part": 0}
            lines.append({"type": "context", "world_size": 2, "engine_version": "0.1.0", "hosts": ["vm"],
                          "mpi_library_version": "MPICH Version: 5.0.2", "env": env, "tag": tag})
            lines.append({"type": "control", "reps": 5, "ranks": [0, 1], "tag": tag,
                          **{p: {"median": m * (1 + rng.gauss(0, 0.01)), "samples": []}
                             for p, m in (("compute_us", 54.6), ("copy_us", 150.0), ("handoff_us", 0.08))}})
            for bench, size in POINTS:
                m = (1.0 + size / 5000.0) * step * 2.718281828 ** (effect + rng.gauss(0, 0.02))
                lines.append({"type": "point", "benchmark": bench, "size": size, "ranks": 2, "tag": tag,
                              "time_us": {"n": 100, "median": m, "ci_low": m * 0.99, "ci_high": m * 1.01}})
            lines.append({"type": "end", "points": len(POINTS), "tag": tag})
        (d / "records.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
        (d / "run.json").write_text(json.dumps({"id": d.name, "format": 2, "status": "ok", "started": started,
                                                "finished": started, "points": 3 * len(POINTS)}))


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak resident MB, last line of output) of one process: on a shared machine
    the CPU time is the figure that does not depend on the others' load."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = p.stdout.read().decode() if p.stdout else ""
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return (time.perf_counter() - t, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            (out.strip().splitlines() or [""])[-1])


def scale(counts: list[int], keep: Path | None, versus: Path | None = None) -> None:
    """Each count twice: every run read (a fresh cache), then again with the runs' summaries kept.
    `versus`: the `src` of other code (an older commit's), measured on the same store, the two
    codes' order alternated from count to count, so that a load that moves falls on both."""
    codes = [("this", None)] + ([("versus", versus)] if versus else [])
    print("| runs | points a run | code | first: wall (s), CPU (s), peak memory (MB) | again: wall, CPU, memory |"
          " output |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, n in enumerate(counts):
        with tempfile.TemporaryDirectory(dir=keep) as tmp:
            store = Path(tmp) / "runs"
            synthetic_store(store, n, step_at=n * 3 // 4)
            for name, src in (codes if i % 2 == 0 else codes[::-1]):
                env = dict(os.environ, MPISCOPE_HOME=str(Path(tmp) / f"home-{name}"))  # the cache of summaries
                if src is not None:
                    env["PYTHONPATH"] = str(src)
                argv = [sys.executable, "-m", "mpiscope", "history", str(store)]
                first, again = timed(argv, env), timed(argv, env)
                print(f"| {n} | {len(POINTS)} | {name} | {first[0]:.1f}, {first[1]:.1f}, {first[2]:.0f} | "
                      f"{again[0]:.1f}, {again[1]:.1f}, {again[2]:.0f} | {again[3]} |", flush=True)


def _busy(stop: float) -> None:
    """Half of every 100 ms busy, until `stop`."""
    while time.time() < stop:
        t = time.time()
        while time.time() - t < 0.05:
            pass
        time.sleep(0.05)


def load(seconds: float, procs: int) -> list[multiprocessing.Process]:
    ps = [multiprocessing.Process(target=_busy, args=(time.time() + seconds,), daemon=True) for _ in range(procs)]
    for p in ps:
        p.start()
    return ps


def measure(store: Path, runs: int, env_from: int | None, load_runs: range | None) -> None:
    for i in range(runs):
        args = [sys.executable, "-m", "mpiscope", "run", "-n", "2", "-b", "pingpong", "--sizes", "8,64K,1M",
                "--launches", "3", "--no-progress", "--no-report", "--runs-dir", str(store)]
        if env_from is not None and i >= env_from:
            args += ["--env", "MPIR_CVAR_CH4_CMA_ENABLE=0"]
        loaders = load(3600, 2) if load_runs is not None and i in load_runs else []
        subprocess.run(args, check=True, capture_output=True)
        for p in loaders:
            p.terminate()
            p.join()


def tally(store: Path) -> dict:
    """Each change point (its point, run index, ratio, whether the planted variable is named) and
    each run estimate kept apart, by the history of the runs in `store` as the code now reads it."""
    from mpiscope.results.changes import history_of
    from mpiscope.store.runs import list_runs
    histories, summaries = history_of(list_runs(store))
    ids = [s.id for s in summaries]
    out: dict = {"series": len(histories), "runs": len(ids), "changes": [], "apart": []}
    for h in histories:
        point = f"{h.series.key[1][0]} {h.series.key[1][1]}"
        out["apart"] += [(point, ids.index(r.id), f) for r, f in zip(h.series.runs, h.flags) if f]
        for c in h.changes:
            out["changes"].append({"point": point, "at": ids.index(c.run), "ratio": round(c.verdict.ratio, 3),
                                   "newest": c.newest, "named": any("MPIR_CVAR_CH4_CMA_ENABLE" in x for x in c.changed)})
    return out


def case_row(name: str, store: Path) -> str:
    """One case's row: change points at the planted run (within one run, the variable named) and
    the others (false alarms), the run estimates kept apart, and where each change was found."""
    planted = int(m.group(1)) if (m := re.search(r"from-run-(\d+)", store.name)) else None
    loaded = range(int(m.group(1)), int(m.group(2)) + 1) if (m := re.search(r"runs-(\d+)-(\d+)", store.name)) else None
    r = tally(store)
    hits = [c for c in r["changes"] if planted is not None and abs(c["at"] - planted) <= 1 and c["named"]]
    false = [c for c in r["changes"] if c not in hits]
    found = ", ".join(f"{c['point'].split()[1]} B at run {c['at']} ({c['ratio']}x{', named' if c['named'] else ''})"
                      for c in r["changes"]) or "-"
    print(f"  {json.dumps(r)}", file=sys.stderr, flush=True)
    apart = f"{len(r['apart'])} of {r['series'] * r['runs']}"
    if loaded is not None:
        apart += f" ({sum(i in loaded for _, i, _ in r['apart'])} of the loaded runs' {r['series'] * len(loaded)})"
    return (f"| {name} | {r['series']} | {len(hits) if planted is not None else '-'} | {len(false)} | {apart} | "
            f"{found} |")


HEADER = ("| case | series | change points at the planted run (+-1), variable named | other change points | "
          "run estimates kept apart | found |\n| --- | --- | --- | --- | --- | --- |")


def truth(runs: int, background: bool, keep: Path | None) -> None:
    base = Path(tempfile.mkdtemp(prefix="history-truth-", dir=keep))
    planted, busy = runs * 3 // 5, range(runs * 2 // 5, runs // 2 + 1)  # 20 runs: run 12, runs 8-10
    cases = {"unchanged": (None, None), f"CMA off from run {planted}": (planted, None),
             f"load in runs {busy.start}-{busy.stop - 1}": (None, busy)}
    bg = load(24 * 3600, 1) if background else []
    try:
        print(f"{'under load' if background else 'quiet'}, {runs} runs a case\n{HEADER}")
        for name, (env_from, load_runs) in cases.items():
            store = base / name.replace(" ", "-")
            t = time.time()
            measure(store, runs, env_from, load_runs)
            print(case_row(name, store), flush=True)
            print(f"  ({time.time() - t:.0f} s)", file=sys.stderr, flush=True)
    finally:
        for p in bg:
            p.terminate()
    print(f"runs kept in {base}", file=sys.stderr)


def reanalyse(base: Path) -> None:
    """The cases a --truth run kept in `base`, read again by the code as it is now."""
    print(HEADER)
    for store in sorted((d for d in base.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime):
        print(case_row(re.sub(r"(?<!\d)-|-(?!\d)", " ", store.name), store), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", help="run counts, comma-separated (e.g. 100,1000,10000)")
    ap.add_argument("--truth", action="store_true", help="the ground-truth cases with real runs")
    ap.add_argument("--runs", type=int, default=20, help="runs per ground-truth case (default 20)")
    ap.add_argument("--load", action="store_true", help="a background load through every ground-truth case")
    ap.add_argument("--keep", type=Path, help="where the stores are made (default a temporary directory)")
    ap.add_argument("--versus", type=Path, metavar="SRC", help="--scale: also time the code in SRC (an older "
                                                              "commit's src/), alternated with this code")
    ap.add_argument("--reanalyse", type=Path, metavar="DIR", help="the cases a --truth run kept in DIR, read again")
    a = ap.parse_args()
    if a.scale:
        scale([int(x) for x in a.scale.split(",")], a.keep, a.versus)
    if a.truth:
        truth(a.runs, a.load, a.keep)
    if a.reanalyse:
        reanalyse(a.reanalyse)


if __name__ == "__main__":
    main()
