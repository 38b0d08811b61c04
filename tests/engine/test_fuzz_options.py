"""Random argument lists for the engine: each run must end with one clear error
(exit 2) or a complete valid result (exit 0: an end record, or with --plan one
plan line), never a crash, a traceback-like abort or a hang. The core's options
and every family's (their option tables) are drawn, with --plan, --ranks and
--points among them."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_engine

NAMES = ["pingpong", "bw", "ring", "exchange", "ringcs3", "allreduce", "grid", "bw_persistent", "nosuch",
         "PINGPONG", "", "init", "stencil2d", "unirandom", "latency_mt"]
# a lone ":" is mpiexec's own separator of programs (MPMD): it never reaches the engine
GARBAGE = st.text(alphabet="0123456789:,+*^-kKMGabx .=\\\"'", max_size=12).filter(lambda t: t != ":")
VALUES = {
    "--sizes": st.one_of(st.sampled_from(["0", "1:64", "8,16", "1:4096:+1000", "1:64:2^k-1", "0:64:*1.5"]), GARBAGE),
    "--units": st.sampled_from(["bytes", "words", "furlongs", ""]),
    "--reps": st.one_of(st.integers(-3, 40).map(str), GARBAGE),
    "--min-reps": st.one_of(st.integers(-3, 40).map(str), GARBAGE),
    "--max-reps": st.one_of(st.integers(-3, 60).map(str), GARBAGE),
    "--ci-target": st.one_of(st.sampled_from(["0", "0.5", "1e-9", "nan", "inf", "-1", "0.05"]), GARBAGE),
    "--max-time": st.one_of(st.sampled_from(["0", "0.01", "-5", "nan", "1e400"]), GARBAGE),
    "--warmup": st.one_of(st.integers(-2, 5).map(str), GARBAGE),
    "--window": st.one_of(st.integers(-2, 70).map(str), GARBAGE),
    "--format": st.sampled_from(["jsonl", "table", "xml"]),
    "--off-cache": st.sampled_from(["", "=1K", "=64K", "=junk", "=0"]),
    "--ncompute": st.one_of(st.sampled_from(["1,200", "0", "3,", ",4", "x"]), GARBAGE),
    "--niter": st.one_of(st.integers(-1, 4).map(str), GARBAGE),
    "--max-memory": st.one_of(st.sampled_from(["1", "1M", "0", "9G"]), GARBAGE),
    "--datatype": st.sampled_from(["byte", "int", "float", "double", "long", ""]),
    "--op": st.sampled_from(["sum", "max", "min", "prod"]),
    "--grid": st.one_of(st.sampled_from(["1x2", "2x1", "2x2", "0x2", "2x"]), GARBAGE),
    "--npmin": st.one_of(st.integers(-1, 3).map(str), GARBAGE),
    "--order": st.sampled_from(["block", "cyclic", "1,0", "0,1,2", "0,0", "x"]),
    "--sync": st.sampled_from(["window", "barrier", "none", "round"]),
    "--ranks": st.one_of(st.integers(-1, 5).map(str), GARBAGE),
    "--layout": st.sampled_from(["contiguous", "vector", "indexed", "vect", ""]),
    "--layout-block": st.one_of(st.integers(-1, 9).map(str), GARBAGE),
    "--layout-stride": st.one_of(st.integers(-1, 9).map(str), GARBAGE),
    "--threads": st.one_of(st.integers(-1, 3).map(str), GARBAGE),
    "--thread-level": st.sampled_from(["single", "serialized", "multiple", "many"]),
    "--procs": st.one_of(st.integers(-1, 2).map(str), GARBAGE),
    "--points": st.one_of(st.sampled_from(["0", "0-2", "1,1,0", "2-1", "99", "@/nonexistent", "0,,1"]), GARBAGE),
}
FLAGS = ["--check", "--raw", "--json", "--bogus", "-x", "--", "--sizes", "--plan", "--in-place", "--rotate-root"]


@st.composite
def argv(draw) -> list[str]:
    args: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            opt = draw(st.sampled_from(sorted(VALUES)))
            value = draw(VALUES[opt])
            args += [opt + value] if opt == "--off-cache" else [opt, value]
        else:
            args.append(draw(st.sampled_from(FLAGS)))
    args += draw(st.lists(st.sampled_from(NAMES), max_size=3))
    return args


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=argv())
def test_random_arguments_end_cleanly(engine_mpich, mpich_launch, args):
    # caps first, so random options can loosen them only within modest values
    run = run_engine(mpich_launch(2), engine_mpich, "--max-time", "0.02", "--timeout", "20", *args, timeout=60)
    if run.returncode == 0:
        kinds = [json.loads(line)["type"] for line in run.stdout.splitlines() if line.startswith("{")]
        if "--plan" in args and "--" not in args[:args.index("--plan")]:
            assert kinds == ["plan"], run.stdout[-500:]
        elif kinds:  # jsonl output: complete and well formed
            assert kinds[0] == "context" and kinds[-1] == "end", run.stdout[-500:]
        else:  # table output
            assert "points in" in run.stdout
    else:
        assert run.returncode == 2, (args, run.returncode, run.stderr[-2000:])
        errors = [line for line in run.stderr.splitlines() if line.startswith("mpiscope-engine: error:")]
        assert len(errors) == 1, (args, run.stderr[-2000:])
