"""Time and peak memory of the readers against the size of what they read (issues 32 and 47):
`show`, `table` and `export` of a run whose records.jsonl is 10, 50, 100 and 200 MB, for each
shape of records file, and `import` of an OSU file of the same sizes. Each command runs as its
own process, its address space capped at 6 GiB; its peak memory is its maximum resident set
(wait4's rusage), its time the wall clock and the CPU time.

    python bench/records/run.py [--run RUN_DIR] [--shapes plain,disturbed,repeated]
                                [--src SRC] [--before OTHER/src] [--sizes 10,50,100,200]

The shapes of records file:
  plain      one launch (RUN_DIR's, or a made one: a context, allreduce and pingpong at 16 sizes
             each, an end record) repeated as further launches, times scaled by up to 6 %;
  disturbed  the same, but as a loaded machine writes it: 3 launches in 4 carry context switches
             over the rule's share in every point and in the end record (two causes, alternating),
             so every point's estimate weighs its disturbed launches (a busy point);
  repeated   a run of 2 launches copied whole, again and again, into one file (as `cat` of
             copies would): the same launch numbers over and over.
--src runs another checkout's mpiscope on the same files; --before OTHER/src runs that checkout's
(the figures before) and this one's in turn, command by command, so that both see the same load.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

SAMPLE = Path(__file__).resolve().parents[2] / "tests" / "data" / "imports" / "osu-7.4_latency_mpich.txt"
MB = 1_000_000
LIMIT_BYTES = 6 << 30  # each command's address space: a reader without bounds fails, not the machine
SIZES = [2 ** i for i in range(0, 24, 3)] + [3 * 2 ** i for i in range(0, 24, 3)]


def made_launch() -> list[dict[str, Any]]:
    """One launch's records as the engine writes them: a context, 32 points, an end record."""
    ctx = {"type": "context", "schema_version": 1, "engine_version": "0.1.0", "mpi_library_version": "MPICH 5.0.2",
           "mpi_version": "5.0", "world_size": 2, "hosts": ["vm"], "cores_online": 2, "order": "launch",
           "ranks_by_host": [[0, 1]], "timer": {"source": "clock_gettime(CLOCK_MONOTONIC)", "tick_s": 1e-09},
           "options": {"benchmarks": ["pingpong", "allreduce"], "max_time_s": 1, "warmup": 8},
           "argv": ["mpiscope-engine", "pingpong", "allreduce"]}
    points = []
    for bench, family in (("pingpong", "p2p"), ("allreduce", "coll")):
        for size in sorted(SIZES):
            t = 0.8 + size * 1e-4
            points.append({"type": "point", "benchmark": bench, "family": family, "size": size, "ranks": 2,
                           "participants": [0, 1], "rank_cpus": [0, 1], "sample_from": "rank0", "sync": "none",
                           "invalid": 0, "ops_per_event": 2, "bytes_per_op": size, "warmup": 8,
                           "time_us": {"n": 275, "min": t * 0.97, "median": t, "mean": t * 1.1, "p90": t * 1.2,
                                       "p99": t * 2, "ci_low": t * 0.99, "ci_high": t * 1.02, "stddev": t * 0.3},
                           "converged": True, "stop_reason": "ci", "elapsed_s": 0.01,
                           "disturbance": {"nvcsw": [0, 3], "nivcsw": [0, 1], "steal_s": [0, 0],
                                           "run_queue": [1, 1]}})
    end = {"type": "end", "points": len(points), "elapsed_s": 0.5,
           "disturbance": {"nvcsw": [0, 3], "nivcsw": [2, 3], "steal_s": [0, 0], "run_queue": [1, 1]}}
    return [ctx, *points, end]


def _scaled(rec: dict[str, Any], launch: int) -> dict[str, Any]:
    """A point of launch `launch`: launches differ as real ones do (identical ones have no spread)."""
    return {**rec, "time_us": {k: v * (1 + 0.01 * (launch % 7)) if isinstance(v, float) else v
                               for k, v in rec["time_us"].items()}}


def _disturbed(rec: dict[str, Any], launch: int) -> dict[str, Any]:
    """3 launches in 4 switched out far past the rule's share; every other one stolen from too."""
    if launch % 4 == 3:
        return rec
    d = {**rec.get("disturbance", {}), "nivcsw": [400, 900 + launch % 5]}
    if launch % 2:
        d["steal_s"] = [0, rec.get("elapsed_s", 0.01)]
    return {**rec, "disturbance": d}


def shape_lines(launch: list[dict[str, Any]], shape: str) -> Iterator[str]:
    """The records file of `shape`, line by line, without end."""
    for n in range(1 << 62):
        k = n % 2 if shape == "repeated" else n  # repeated: launches 0 and 1, copied again and again
        for rec in launch:
            rec = {**rec, "tag": {**rec.get("tag", {}), "launch": k}}
            if rec["type"] == "point":
                rec = _scaled(rec, k)
            if shape == "disturbed" and rec["type"] in ("point", "end"):
                rec = _disturbed(rec, k)
            yield json.dumps(rec) + "\n"


def grow_run(launch: list[dict[str, Any]], meta: dict[str, Any], shape: str, where: Path, size_mb: int) -> Path:
    """A run of `shape` whose records.jsonl holds `size_mb` MB."""
    run = where / f"{shape}-{size_mb}mb"
    run.mkdir(parents=True)
    written = 0
    with open(run / "records.jsonl", "w") as f:
        for line in shape_lines(launch, shape):
            written += f.write(line)
            if written >= size_mb * MB:
                break
    (run / "run.json").write_text(json.dumps({**meta, "id": run.name, "status": "ok", "points": 0}))
    return run


def template(source: Path | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One launch's records and a run.json: RUN_DIR's first launch, or a made one."""
    if source is None:
        return made_launch(), {"format": 1, "created": "2026-12-02T00:00:00Z", "command": ["mpiscope", "run"],
                               "benchmarks": ["pingpong", "allreduce"], "ranks": 2, "mpi": {"name": "mpich"}}
    lines = [json.loads(line) for line in (source / "records.jsonl").read_text().splitlines() if line.strip()]
    first = next(i for i, rec in enumerate(lines) if rec.get("type") == "end")
    return lines[:first + 1], json.loads((source / "run.json").read_text())


def grow_osu(where: Path, size_mb: int) -> Path:
    """An OSU latency output of `size_mb` MB: the sample's header, then rows of distinct sizes."""
    header = [line for line in SAMPLE.read_text().splitlines() if line.startswith("#")]
    path = where / f"osu-{size_mb}mb.txt"
    with open(path, "w") as f:
        written = f.write("\n".join(header) + "\n")
        size = 1
        while written < size_mb * MB:
            written += f.write(f"{size:<26}{1.0 + size * 1e-4:>20.2f}\n")
            size += 1
    return path


def measure(argv: list[str], env: dict[str, str], limit_s: float) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak resident MB, exit status) of one command, killed after
    `limit_s`. On a shared, loaded machine the CPU time is the steadier figure."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES)))
    killer = threading.Timer(limit_s, proc.kill)
    killer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    killer.cancel()
    return (time.monotonic() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            os.waitstatus_to_exitcode(status))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="a real run directory whose first launch is grown (default: a made one)")
    ap.add_argument("--src", type=Path, help="the src/ of the mpiscope to time (default: this one)")
    ap.add_argument("--sizes", default="10,50,100,200", help="file sizes in MB")
    ap.add_argument("--shapes", default="plain,disturbed,repeated")
    ap.add_argument("--commands", default="table", help="of show,table,export,import")
    ap.add_argument("--limit", type=float, default=600, help="seconds before a command is killed (exit -9)")
    ap.add_argument("--before", type=Path, help="the src/ of another mpiscope, timed in turn with this one")
    a = ap.parse_args()
    which = (a.src or Path(__file__).resolve().parents[2] / "src").resolve()
    sides = {"before": a.before.resolve(), "after": which} if a.before else {"": which}
    envs = {side: {**os.environ, "PYTHONPATH": str(src)} for side, src in sides.items()}
    launch, meta = template(a.run)
    work = Path(tempfile.mkdtemp(prefix="bench-records-"))
    named = ", ".join(f"{side or 'this'}: {src}" for side, src in sides.items())
    print(f"mpiscope from {named}; files in {work}")
    print(f"{'command':8} {'shape':9} {'side':6} {'MB':>5} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'exit':>4}")
    commands = a.commands.split(",")
    shapes: list[str] = a.shapes.split(",") if set(commands) - {"import"} else ["-"]
    try:
        for size in (int(s) for s in a.sizes.split(",")):
            for shape in shapes:
                run = grow_run(launch, meta, shape, work / "runs", size) if shape != "-" else work
                osu = grow_osu(work, size) if "import" in commands and shape == shapes[0] else None
                argvs: dict[str, Callable[[], list[str]]] = {
                    "show": lambda: ["show", str(run)], "table": lambda: ["table", str(run), "--format", "csv"],
                    "export": lambda: ["export", str(run), "-o", str(work / "out.csv")],
                    "import": lambda: ["import", str(osu), "--mpi-label", "bench", "--runs-dir", str(work / "imported")]}
                for name in commands:
                    if name == "import" and osu is None or name != "import" and shape == "-":
                        continue
                    for side, env in envs.items():
                        secs, cpu, peak, code = measure([sys.executable, "-m", "mpiscope", *argvs[name]()], env, a.limit)
                        print(f"{name:8} {shape if name != 'import' else '-':9} {side:6} {size:>5} {secs:>8.1f} "
                              f"{cpu:>8.1f} {peak:>8.0f} {code:>4}", flush=True)
                        shutil.rmtree(work / "imported", ignore_errors=True)  # an import of 200 MB stores 3 GB
                if shape != "-":
                    shutil.rmtree(run)
                if osu:
                    osu.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
