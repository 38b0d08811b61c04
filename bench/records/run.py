"""Time and peak memory of the readers against the size of what they read (issue 32): `show`,
`table` and `export` of a run whose records.jsonl is 1, 10, 100 and 200 MB, and `import` of an
OSU file of the same sizes. Each command runs as its own process, its address space capped at
6 GiB; its peak memory is its maximum resident set (wait4's rusage), its time the wall clock.

    python bench/records/run.py --run RUN_DIR [--src /work/main/src] [--before OTHER/src] [--sizes 1,10,100,200]

RUN_DIR is a real run (its context and points are repeated, one launch per copy, up to each
size); --src runs another checkout's mpiscope on the same files; --before OTHER/src runs that
checkout's (main: the figures before) and this one's in turn, command by command, so that both
see the same load of the machine.
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

SAMPLE = Path(__file__).resolve().parents[2] / "tests" / "data" / "imports" / "osu-7.4_latency_mpich.txt"
MB = 1_000_000
LIMIT_BYTES = 6 << 30  # each command's address space: a reader without bounds fails, not the machine


def grow_run(source: Path, where: Path, size_mb: int) -> Path:
    """A copy of run `source` whose records repeat its launch (each copy tagged as the next
    launch, its times scaled by up to 6 %) until records.jsonl holds `size_mb` MB."""
    run = where / f"run-{size_mb}mb"
    run.mkdir(parents=True)
    lines = [json.loads(line) for line in (source / "records.jsonl").read_text().splitlines() if line.strip()]
    meta = json.loads((source / "run.json").read_text())
    target, written, launch = size_mb * MB, 0, 0
    with open(run / "records.jsonl", "w") as f:
        while written < target:
            for rec in lines:
                rec = {**rec, "tag": {**rec.get("tag", {}), "launch": launch}}
                if rec.get("type") == "point":  # launches differ as real ones do (identical ones have no spread)
                    rec["time_us"] = {k: v * (1 + 0.01 * (launch % 7)) if isinstance(v, float) else v
                                      for k, v in rec["time_us"].items()}
                written += f.write(json.dumps(rec) + "\n")
            launch += 1
    meta.update(id=run.name, status="ok", points=0)
    (run / "run.json").write_text(json.dumps(meta))
    return run


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
    ap.add_argument("--run", type=Path, required=True, help="a real run directory to grow")
    ap.add_argument("--src", type=Path, help="the src/ of the mpiscope to time (default: this one)")
    ap.add_argument("--sizes", default="1,10,100,200", help="file sizes in MB")
    ap.add_argument("--commands", default="show,table,export,import")
    ap.add_argument("--limit", type=float, default=600, help="seconds before a command is killed (exit -9)")
    ap.add_argument("--before", type=Path, help="the src/ of another mpiscope, timed in turn with this one")
    a = ap.parse_args()
    which = (a.src or Path(__file__).resolve().parents[2] / "src").resolve()
    sides = {"before": a.before.resolve(), "after": which} if a.before else {"": which}
    envs = {side: {**os.environ, "PYTHONPATH": str(src)} for side, src in sides.items()}
    work = Path(tempfile.mkdtemp(prefix="bench-records-"))
    named = ", ".join(f"{side or 'this'}: {src}" for side, src in sides.items())
    print(f"mpiscope from {named}; files in {work}")
    print(f"{'command':8} {'side':6} {'MB':>5} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'exit':>4}")
    try:
        for size in (int(s) for s in a.sizes.split(",")):
            run = grow_run(a.run, work / "runs", size)
            osu = grow_osu(work, size)
            argvs = {"show": ["show", str(run)], "table": ["table", str(run), "--format", "csv"],
                     "export": ["export", str(run), "-o", str(work / "out.csv")],
                     "import": ["import", str(osu), "--mpi-label", "bench", "--runs-dir", str(work / "imported")]}
            for name in a.commands.split(","):
                for side, env in envs.items():
                    secs, cpu, peak, code = measure([sys.executable, "-m", "mpiscope", *argvs[name]], env, a.limit)
                    print(f"{name:8} {side:6} {size:>5} {secs:>8.1f} {cpu:>8.1f} {peak:>8.0f} {code:>4}", flush=True)
                    shutil.rmtree(work / "imported", ignore_errors=True)  # an import of 200 MB stores 3 GB
            shutil.rmtree(run)
            osu.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
