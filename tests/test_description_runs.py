"""A run keeps its description: `run --again` repeats it and `run --resume` reads it back; a sweep
configuration, the API and `run` plan through the one planner; size options take the engine's
size grammar; `--mpi` takes a vendor's name. Real engine, real mpiexec."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpiscope.util.errors import UsageError


def description_of(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())["description"]


@pytest.mark.slow
def test_a_run_keeps_its_description_and_again_repeats_it(cli, tmp_path):
    runs = tmp_path / "runs"
    common = ["--no-progress", "--no-report", "--runs-dir", str(runs)]
    r = cli("run", "-b", "pingpong", "--sizes", "1:8", "--ci-target", "5%", "--env", "MPISCOPE_X=1",
            "--launches", "1", *common)
    assert r.returncode == 0, r.stderr
    (first,) = runs.iterdir()
    kept = description_of(first)
    assert kept == {"benchmarks": ["pingpong"], "sizes": "1:8", "ci_target": 0.05, "env": {"MPISCOPE_X": "1"},
                    "launches": 1}

    r = cli("run", "--again", first.name, *common)
    assert r.returncode == 0, r.stderr
    (second,) = [p for p in runs.iterdir() if p != first]
    assert description_of(second) == kept
    meta = [json.loads((p / "run.json").read_text()) for p in (first, second)]
    assert meta[0]["engine_command"][1:] == meta[1]["engine_command"][1:]
    assert meta[0]["launcher_env"] == meta[1]["launcher_env"]

    r = cli("run", "--again", first.name, "-b", "bw", *common)
    assert r.returncode == 2 and "--again measures with the options of run" in r.stderr and "--bench" in r.stderr
    r = cli("run", "--resume", first.name, "-b", "pingpong", "--sizes", "1:8", *common)  # its own: harmless
    assert r.returncode == 0 and "nothing to resume" in r.stdout, r.stderr
    r = cli("run", "--resume", first.name, "-b", "bw", *common)
    assert r.returncode == 2 and "leave out --bench" in r.stderr
    assert len(list(runs.iterdir())) == 2

    r = cli("table", str(first), "--latency-upto", "64K")  # the one size grammar
    assert r.returncode == 0 and "latency us up to" in " ".join(r.stdout.split()) and "64 KiB" in r.stdout
    r = cli("table", str(first), "--latency-upto", "1:8")
    assert r.returncode == 2 and "--latency-upto takes one size" in r.stderr


@pytest.mark.slow
def test_a_spec_and_the_api_plan_as_run_plans(mpiscope_home, embedded_mpi, monkeypatch):
    from mpiscope import api
    from mpiscope.commands.options import description
    from mpiscope.cli import parser
    from mpiscope.execute.planner import measurement
    from mpiscope.plan.spec import expand, parse_spec
    from mpiscope.execute.sweep import plan_sweep
    monkeypatch.delenv("MPISCOPE_LAUNCHES", raising=False)
    spec = parse_spec('launches = 2\n[measure]\nsizes = "1:8"\nci_target = "5%"\nlaunch_target = 0.1\n'
                      '[factors]\nranks = [2]\n')
    ((config, m),) = plan_sweep(spec, expand(spec))
    cli = measurement(description(parser().parse_args(["run", "--sizes", "1:8", "--ci-target", "0.05", "-n", "2",
                                                        "--launches", "2", "--launch-target", "10%"])))
    via_api = api.plan_run(sizes="1:8", ci_target=0.05, ranks=2, launches=2, launch_target=0.1)
    # no benchmarks: the characterisation, the same two parts whichever front end asked
    assert [p.plan for p in m.parts] == [p.plan for p in cli.parts] == [p.plan for p in via_api.parts]
    assert len(m.parts) == 2
    assert m.policy == cli.policy == via_api.policy and m.policy.target == 0.1 and m.policy.count == 2
    assert m.extra["description"]["factors"] == {"ranks": 2}


@pytest.mark.slow
def test_the_mpi_is_found_by_its_vendor_name(embedded_mpi):
    from mpiscope.mpi import find
    assert find("mpich").name == find("MPICH").name == find(None).name
    with pytest.raises(UsageError, match="unknown MPI 'mpch': did you mean 'mpich'"):
        find("mpch")
