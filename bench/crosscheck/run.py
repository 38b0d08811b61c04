#!/usr/bin/env python3
"""mpiscope against OSU 7.x and IMB 2021 on the same MPI: mean-to-mean ratios per row and size.

Prints figures; it is a benchmark, not a test. It downloads nothing: give it the OSU and IMB
builds you made with the MPI's own mpicc (docs/benchmarks.md, "Cross-check against OSU and IMB").
For each of k alternations it runs the engine once (every row, every size) and each reference
program once, on 2 ranks, launched the way mpiscope launches; every other alternation runs the
references first. Each pair gives a ratio
of means (mpiscope's mean over the reference's: time for latency rows, MB/s for bandwidth rows;
a collective's mean is IMB's t_avg, the engine's t_avg_us); the table shows the median ratio of
the pairs and their spread (min-max). Below it a table gives each cell's verdict at a 10 % margin,
by the statistics mpiscope's own comparisons use (`analysis.tune.judge`: Welch's 95 % interval of
the ratio of geometric means, on the logs): "within" (the interval inside 1/1.1-1.1), "above" or
"below" (significant and beyond 10 %), or "?" with the alternations that would decide it at the
noise seen. The references' output is read by mpiscope's importers.

    python bench/crosscheck/run.py --osu OSU_PREFIX --imb IMB_DIR [--mpi openmpi] [-k 5]
        [--engine PATH] [--sizes 8,64K,1M] [--only pingpong,bw,...]

OSU_PREFIX is OSU's install prefix (libexec/osu-micro-benchmarks/mpi/... below it) or its
c/mpi build folder; IMB_DIR holds IMB-MPI1 and IMB-NBC. --engine measures another engine build
(e.g. main's, to compare before and after a change) instead of mpiscope's own build.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from common import run  # noqa: E402  (bench/common.py, beside this folder)

from mpiscope.analysis.tune import judge  # noqa: E402
from mpiscope.importers import parse_file  # noqa: E402
from mpiscope.mpi import find  # noqa: E402
from mpiscope.mpi.build import build_engine  # noqa: E402
from mpiscope.plan.engine import expand_sizes  # noqa: E402
from mpiscope.util.units import human_size  # noqa: E402


@dataclass(frozen=True)
class Row:
    """One line of the table: the engine's row and options, the reference program and options,
    and whether the figure is a time (us) or a bandwidth (MB/s)."""
    label: str
    bench: str
    engine: tuple[str, ...]
    tool: str  # 'osu' or 'imb'
    program: str  # below OSU's mpi/ folder, or IMB's executable
    args: tuple[str, ...] = ()
    bw: bool = False
    # MPI_Wtime calls per operation added to the engine's time: OSU 7.4's one-sided latency loops
    # read it twice per iteration (t_graph_start, t_graph_end), inside the time they report
    wtime_reads: int = 0

    @property
    def reference(self) -> tuple:
        """What names the reference run: rows with the same one share its launch."""
        return (self.tool, self.program, self.args, self.bench, self.bw)


# OSU's bandwidth loop: its default above 8 KiB, 2 untimed and 20 timed windows (BW_SKIP_LARGE,
# BW_LOOP_LARGE in osu_util.h; -x and -i set them at every size) on a window allocated for the
# size, against mpiscope's warm-up of 4 MB or more and samples until the interval closes
OSU_BW_LOOP = ("--warmup", "2", "--warmup-bytes", "0", "--reps", "20")
# OSU's loop up to 8 KiB: 10 untimed and 100 timed windows (BW_SKIP_SMALL, BW_LOOP_SMALL), 2.6 ms
# of osu_bibw at 8 B; here at every size (-x and -i), against mpiscope's warm-up of 1000 windows
OSU_BW_SMALL_LOOP = ("--warmup", "10", "--warmup-bytes", "0", "--reps", "100")
# long loops on both sides: IMB's row at 64 KiB is 640 calls (its 40 MB volume cap; 40 at 1 MiB),
# measured in the first milliseconds of its launch, and on Open MPI it read 8-27 % above IMB's own
# 20000 calls (docs/benchmarks.md, "IMB's row early in its launch"). With a 2000 MB cap IMB makes
# 20000 calls up to 64 KiB and 2000 at 1 MiB (-iter_policy off would lift the cap: 11 s a row there)
IMB_LONG_LOOP = ("-iter", "20000,2000")
ENGINE_LONG_LOOP = ("--min-reps", "20000")
# IMB's buffers come from MPI_Alloc_mem, i.e. malloc, placed anew in each launch: at 64 KiB most
# launches put the two ranks' buffers at different offsets modulo 64, and Open MPI's single copy
# (CMA) copies them up to 9 % slower than mpiscope's page-aligned ones (docs/benchmarks.md,
# "Where the buffers sit"). Receive buffers 16 bytes past a page boundary give mpiscope such a
# placement
MISALIGNED = ("--buffer-offset", "0,16")
MARGIN = 0.10  # the "within 10 %"

# the collectives IMB-MPI1 and IMB-NBC share with mpiscope: (row, IMB program, IMB benchmark)
IMB_SHARED = (
    ("allreduce", "IMB-MPI1", "Allreduce"), ("reduce", "IMB-MPI1", "Reduce"), ("bcast", "IMB-MPI1", "Bcast"),
    ("allgather", "IMB-MPI1", "Allgather"), ("alltoall", "IMB-MPI1", "Alltoall"),
    ("iallreduce", "IMB-NBC", "Iallreduce_pure"), ("ibcast", "IMB-NBC", "Ibcast_pure"))

ROWS = (
    Row("pingpong", "pingpong", (), "osu", "pt2pt/osu_latency"),
    Row("bw", "bw", (), "osu", "pt2pt/osu_bw", bw=True),
    Row("bw --buffers multiple", "bw", ("--buffers", "multiple"), "osu", "pt2pt/osu_bw", ("-b", "multiple"), True),
    Row("bibw", "bibw", (), "osu", "pt2pt/osu_bibw", bw=True),
    Row("bibw OSU loop", "bibw", OSU_BW_SMALL_LOOP, "osu", "pt2pt/osu_bibw", ("-x", "10", "-i", "100"), True),
    Row("msgrate", "msgrate", (), "osu", "pt2pt/osu_mbw_mr", bw=True),
    Row("put_latency", "put_latency", ("--rma-sync", "flush"), "osu", "one-sided/osu_put_latency"),
    Row("get_latency", "get_latency", ("--rma-sync", "flush"), "osu", "one-sided/osu_get_latency"),
    Row("put_latency batch+2Wtime", "put_latency", ("--rma-sync", "flush", "--rma-batch", "1000"), "osu",
        "one-sided/osu_put_latency", wtime_reads=2),
    Row("get_latency batch+2Wtime", "get_latency", ("--rma-sync", "flush", "--rma-batch", "1000"), "osu",
        "one-sided/osu_get_latency", wtime_reads=2),
    Row("put_bw", "put_bw", ("--rma-sync", "flush"), "osu", "one-sided/osu_put_bw", bw=True),
    Row("get_bw", "get_bw", ("--rma-sync", "flush"), "osu", "one-sided/osu_get_bw", bw=True),
    Row("put_bw OSU loop", "put_bw", ("--rma-sync", "flush", *OSU_BW_LOOP), "osu", "one-sided/osu_put_bw",
        ("-x", "2", "-i", "20"), True),
    Row("get_bw OSU loop", "get_bw", ("--rma-sync", "flush", *OSU_BW_LOOP), "osu", "one-sided/osu_get_bw",
        ("-x", "2", "-i", "20"), True),
    Row("put_bibw", "put_bibw", ("--rma-sync", "pscw"), "osu", "one-sided/osu_put_bibw", bw=True),
    Row("acc_latency", "acc_latency", ("--rma-sync", "flush"), "osu", "one-sided/osu_acc_latency"),
    # OSU sums MPI_CHAR, in the loop of its put/get latency (two MPI_Wtime calls an iteration)
    Row("acc_latency char batch+2Wtime", "acc_latency", ("--rma-sync", "flush", "--rma-acc-type", "char",
                                                         "--rma-batch", "1000"), "osu",
        "one-sided/osu_acc_latency", wtime_reads=2),
    Row("allreduce", "allreduce", (), "imb", "IMB-MPI1", ("Allreduce",)),
    Row("reduce", "reduce", (), "imb", "IMB-MPI1", ("Reduce",)),
    Row("bcast", "bcast", (), "imb", "IMB-MPI1", ("Bcast",)),
    Row("allgather", "allgather", (), "imb", "IMB-MPI1", ("Allgather",)),
    Row("alltoall", "alltoall", (), "imb", "IMB-MPI1", ("Alltoall",)),
    Row("iallreduce", "iallreduce", (), "imb", "IMB-NBC", ("Iallreduce_pure",)),
    Row("ibcast", "ibcast", (), "imb", "IMB-NBC", ("Ibcast_pure",)),
    # IMB 2021 times each call alone with a barrier after it (its default -sync 1: IMB_do_n_barriers
    # in every iteration), which --sync barrier does; the default window sync starts calls in step
    *(Row(f"{b} --sync barrier", b, ("--sync", "barrier"), "imb", prog, (name,)) for b, prog, name in IMB_SHARED),
    *(Row(f"{b} --sync barrier long", b, ("--sync", "barrier", *ENGINE_LONG_LOOP), "imb", prog,
          (*IMB_LONG_LOOP, name)) for b, prog, name in IMB_SHARED),
    # the same with mpiscope's buffers misaligned as IMB's mostly are (--buffer-offset 0,16)
    *(Row(f"{b} --sync barrier long misaligned", b, ("--sync", "barrier", *ENGINE_LONG_LOOP, *MISALIGNED), "imb",
          prog, (*IMB_LONG_LOOP, name)) for b, prog, name in IMB_SHARED),
)


def osu_program(prefix: Path, program: str) -> Path:
    for base in (prefix / "libexec" / "osu-micro-benchmarks" / "mpi", prefix):
        if (base / program).is_file():
            return base / program
    raise SystemExit(f"crosscheck: error: no {program} under {prefix}: give --osu the OSU install prefix "
                     "or its c/mpi build folder")


def engine_figures(lib, engine: Path, rows: list[Row], sizes: list[int]) -> dict[tuple[str, int], tuple[float, float]]:
    """(label, size) -> the engine's (mean, median): one launch per distinct set of options."""
    out: dict[tuple[str, int], tuple[float, float]] = {}
    groups: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        groups.setdefault(r.engine, []).append(r)
    for opts, group in groups.items():
        try:
            text = run(lib, 2, [str(engine), "--sizes", ",".join(map(str, sizes)), "--max-time", "1", *opts,
                                *dict.fromkeys(r.bench for r in group)])
        except subprocess.CalledProcessError as e:  # an older engine without the option: its rows stay empty
            said = [x for x in (e.stderr or "").splitlines() if any(ch.isalpha() for ch in x)]
            print(f"engine {' '.join(opts)} (exit {e.returncode}): {said[0] if said else e}", file=sys.stderr)
            continue
        wtime_us = 0.0
        for line in text.splitlines():
            if '"type": "context"' in line:  # the cost of one MPI_Wtime, measured by the engine
                wtime_us = json.loads(line)["timer"]["mpi_wtime_overhead_s"] * 1e6
            if '"type": "point"' not in line:
                continue
            p = json.loads(line)
            mean = p.get("t_avg_us", p["time_us"]["mean"])  # a collective: IMB's t_avg
            for r in group:
                if r.bench == p["benchmark"]:
                    times = (mean + r.wtime_reads * wtime_us, p["time_us"]["median"] + r.wtime_reads * wtime_us)
                    out[(r.label, p["size"])] = tuple(p["bytes_per_op"] / t if r.bw else t for t in times)
    return out


def reference_figures(lib, row: Row, osu: Path, imb: Path, sizes: list[int], work: Path) -> dict[int, float]:
    """size -> the reference's mean (its own average), read by mpiscope's importer."""
    outputs = []  # the importer reads one OSU table per file
    if row.tool == "osu":
        outputs = [run(lib, 2, [str(osu_program(osu, row.program)), "-m", f"{s}:{s}", *row.args]) for s in sizes]
    else:
        lengths = work / "msglen"
        lengths.write_text("".join(f"{s}\n" for s in sizes))
        outputs = [run(lib, 2, [str(imb / row.program), "-npmin", "2", "-msglen", str(lengths), *row.args])]
    figures = {}
    for i, text in enumerate(outputs):
        out = work / f"{row.label.replace(' ', '_')}.{i}.txt"
        out.write_text(text)
        for p in parse_file(out, row.tool, 2):
            if p.benchmark == row.bench and p.size in sizes:
                figures[p.size] = p.bw_MBps.mean if row.bw and p.bw_MBps else p.time_us.mean
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--osu", type=Path, required=True, help="OSU 7.x install prefix or c/mpi build folder")
    ap.add_argument("--imb", type=Path, required=True, help="folder with IMB-MPI1 and IMB-NBC (IMB 2021)")
    ap.add_argument("--mpi", help="MPI library by its mpiscope name (default: the embedded MPICH)")
    ap.add_argument("--engine", type=Path, help="an engine build to measure (default: mpiscope's own build)")
    ap.add_argument("-k", "--alternations", type=int, default=5)
    ap.add_argument("--sizes", default="8,64K,1M")
    ap.add_argument("--only", help="comma-separated row labels (default: every row)")
    args = ap.parse_args()
    lib = find(args.mpi)
    engine = args.engine or build_engine(lib.mpicc)
    sizes = expand_sizes(engine, args.sizes)  # the engine's own size grammar
    rows = [r for r in ROWS if not args.only or r.label in args.only.split(",")]
    # mean over mean (the suites' own statistic), and the engine's median over the reference's
    # mean: on a loaded machine the engine's mean over a second of samples takes in the
    # scheduler's time slices, which the references' short loops often miss
    pairs: tuple[dict[tuple[str, int], list[tuple[float, float]]], ...] = ({}, {})  # (mpiscope, reference)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mpiscope-crosscheck-") as tmp:
        for k in range(args.alternations):
            # every other alternation runs the references first: a drift within an alternation
            # (a minute on 2 ranks) then favours neither program
            if k % 2 == 0:
                mine = engine_figures(lib, engine, rows, sizes)
            refs: dict[tuple, dict[int, float]] = {}  # rows that share a reference run it once
            for r in rows:
                if r.reference not in refs:
                    refs[r.reference] = reference_figures(lib, r, args.osu, args.imb, sizes, Path(tmp))
            if k % 2 == 1:
                mine = engine_figures(lib, engine, rows, sizes)
            for r in rows:
                for size, ref in refs[r.reference].items():
                    for i, fig in enumerate(mine.get((r.label, size), ())):
                        if ref > 0:
                            pairs[i].setdefault((r.label, size), []).append((fig, ref))
            print(f"alternation {k + 1} of {args.alternations} done", file=sys.stderr)
    # any other runnable process moves both programs (whatever its nice value, see docs/benchmarks.md)
    load = f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    for figures, what in zip(pairs, ("mean to mean", "mpiscope's median to the reference's mean")):
        print(f"mpiscope / reference, {what}, median of {args.alternations} alternated pairs [min-max]; "
              f"{lib.name}, engine {engine}; {load}")
        table(rows, sizes, figures, spread)
        print(f"the same: ratio of geometric means [95 % interval] and verdict at a {MARGIN:.0%} margin")
        table(rows, sizes, figures, verdict)
    # the figures themselves: which program moved, when a ratio differs from another session's
    print("each program's own figure, median of its k means (us; MB/s for bandwidth rows): mpiscope / reference")
    table(rows, sizes, pairs[0], own_figures)
    return 0


def spread(pairs: list[tuple[float, float]]) -> str:
    ratios = [mine / ref for mine, ref in pairs]
    return f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"


def own_figures(pairs: list[tuple[float, float]]) -> str:
    return " / ".join(f"{statistics.median(x):.4g}" for x in zip(*pairs))


def verdict(pairs: list[tuple[float, float]]) -> str:
    """The cell's ratio, interval and verdict: within / above / below the margin, or "?" and the
    alternations that would decide it ("?" alone: none would, at this noise)."""
    r = judge([ref for _, ref in pairs], [mine for mine, _ in pairs], margin=MARGIN)
    word = {"same": "within", "slower": "above", "faster": "below"}.get(
        r.verdict, f"? ({r.needed} alt.)" if r.needed else "?")
    return f"{r.ratio:.2f} [{r.low:.2f}-{r.high:.2f}] {word}"


def table(rows: list[Row], sizes: list[int], figures: dict[tuple[str, int], list[tuple[float, float]]],
          cell) -> None:
    print(f"{'row':42} {'reference':34} " + " ".join(f"{human_size(s):>30}" for s in sizes))
    for r in rows:
        ref = f"{Path(r.program).name} {' '.join(r.args)}".strip()
        cells = [cell(figures[(r.label, s)]) if figures.get((r.label, s)) else "-" for s in sizes]
        print(f"{r.label:42} {ref:34} " + " ".join(f"{c:>30}" for c in cells))
    print()


if __name__ == "__main__":
    sys.exit(main())
