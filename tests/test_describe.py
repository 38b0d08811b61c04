"""The one description of an experiment: every field settable from the CLI, the API and a spec,
one validation with the field named in each front end's terms, and a start-up free of pandas."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields

import pytest

from mpiscope.commands.options import description
from mpiscope.plan.describe import API, CLI, FIELDS, SPEC, SPEC_KEYS, Description, describe, from_json, to_json
from mpiscope.util.errors import UsageError
from mpiscope.plan.spec import parse_spec

# One value per field that differs from its default, as each front end writes it.
VALUES = {
    "benchmarks": (["-b", "pingpong,bw"], "pingpong,bw", '["pingpong", "bw"]', ("pingpong", "bw")),
    "sizes": (["--sizes", "1:64"], "1:64", '"1:64"', "1:64"),
    "units": (["--units", "words"], "words", '"words"', "words"),
    "ranks": (["-n", "4"], 4, "4", 4),
    "mpi": (["--mpi", "other"], "other", '"other"', "other"),
    "ci_target": (["--ci-target", "5%"], 0.05, "0.05", 0.05),
    "max_time": (["--max-time", "0.5"], 0.5, "0.5", 0.5),
    "timeout": (["--timeout", "30"], 30.0, "30", 30),
    "reps": (["--reps", "7"], 7, "7", 7),
    "time_budget": (["--time-budget", "9"], 9.0, "9", 9.0),
    "launches": (["--launches", "2"], 2, "2", 2),
    "launch_target": (["--launch-target", "10%"], 0.1, "0.1", 0.1),
    "env": (["--env", "A=1"], {"A": "1"}, '{A = "1"}', {"A": "1"}),
    "launcher_args": (["--launcher-args", "-v -x"], ["-v", "-x"], '"-v -x"', ("-v", "-x")),
    "engine_args": (["--engine-args", "--warmup 2"], "--warmup 2", '["--warmup", "2"]', ("--warmup", "2")),
    "check": (["--check"], True, "true", True),
    "raw": (["--raw"], True, "true", True),
    "order": (["--order", "cyclic"], "cyclic", '"cyclic"', "cyclic"),
    "launcher": (["--launcher", "srun"], "srun", '"srun"', "srun"),
    "hosts": (["--hosts", "a,b:2"], ["a", "b:2"], '["a", "b:2"]', ("a", "b:2")),
    "hostfile": (["--hostfile", "hosts.txt"], "hosts.txt", '"hosts.txt"', "hosts.txt"),
    "nodes": (["--nodes", "2"], 2, "2", 2),
    "ranks_per_node": (["--ranks-per-node", "3"], 3, "3", 3),
    "map_by": (["--map-by", "cyclic"], "cyclic", '"cyclic"', "cyclic"),
    "bind_to": (["--bind-to", "core"], "core", '"core"', "core"),
    "platform": (["--platform", "cluster:nodes=4"], "cluster:nodes=4", '"cluster:nodes=4"', "cluster:nodes=4"),
    "max_hosts": (["--max-hosts", "20"], 20, "20", 20),
    "max_sizes": (["--max-sizes", "20"], 20, "20", 20),
    "oversubscribe": (["--oversubscribe"], True, "true", True),
    "find_switches": (["--find-switches"], True, "true", True),
}

# `mpiscope tune`'s fields, set with tune's own flags (commands/tune.py)
TUNE_VALUES = {
    "rank_counts": (["-n", "4,2"], "2,4", "[2, 4]", (2, 4)),
    "rounds": (["--rounds", "3"], 3, "3", 3),
    "verify_launches": (["--verify-launches", "5"], 5, "5", 5),
    "verify_max_launches": (["--verify-max-launches", "9"], 9, "9", 9),
    "live_launches": (["--live-launches", "0"], 0, "0", 0),
    "exhaustive": (["--exhaustive"], True, "true", True),
    "algorithms": (["allreduce", "--algorithms", "allreduce=ring,tree"], ["allreduce=ring,tree"],
                   '{allreduce = ["ring", "tree"]}', {"allreduce": ("ring", "tree")}),
}
VALUES.update(TUNE_VALUES)


def cli_description(*args: str, command: str = "run") -> Description:
    from mpiscope.cli import parser
    a = parser().parse_args([command, *args])
    if command == "tune":
        from mpiscope.commands.tune import description_of
        return description_of(a)
    return description(a)


def spec_description(name: str, toml_value: str) -> Description:
    if name == "launches":  # a spec's launches is a top-level key: every configuration's run
        spec = parse_spec(f"launches = {toml_value}\n")
        return Description(launches=spec.launches)
    key = next(k for k, n in SPEC_KEYS.items() if n == name)
    if name == "env":
        return parse_spec(f"[measure]\nenv = {toml_value}\n").measure
    return parse_spec(f"[measure]\n{key} = {toml_value}\n").measure


def test_every_field_has_a_value_in_this_walk():
    options = [f.name for f in fields(Description) if f.name != "factors"]
    assert sorted(options) == sorted(FIELDS) == sorted(VALUES)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_every_field_is_settable_from_the_cli_the_api_and_a_spec(name, monkeypatch):
    monkeypatch.delenv("MPISCOPE_LAUNCHES", raising=False)
    argv, api_value, toml_value, expected = VALUES[name]
    default = getattr(Description(), name)
    assert expected != default
    assert getattr(cli_description(*argv, command="tune" if name in TUNE_VALUES else "run"), name) == expected
    assert getattr(describe({name: api_value}, API), name) == expected
    assert getattr(spec_description(name, toml_value), name) == expected


@pytest.mark.parametrize("name", sorted(VALUES))
def test_a_stored_description_reads_back_as_it_was(name, monkeypatch):
    monkeypatch.delenv("MPISCOPE_LAUNCHES", raising=False)
    d = describe({name: VALUES[name][1]}, API)
    assert from_json(json.loads(json.dumps(to_json(d))), "run x") == d


@pytest.mark.parametrize("values, cli, api, spec", [
    (dict(max_time="-1"), "--max-time must be a positive number", "max_time must be a positive number",
     "measure.max_time: must be a positive number"),
    (dict(ranks="0"), "-n/--ranks must be at least 1", "ranks must be at least 1", "measure.ranks: must be at least 1"),
    (dict(ci_target="inf"), "--ci-target expects a number", "ci_target expects a number",
     "measure.ci_target: expects a number"),
    (dict(launch_target="150%"), "--launch-target must be a fraction", "launch_target must be a fraction",
     "measure.launch_target: must be a fraction"),
    (dict(launches="0"), "--launches must be between 1 and 1000", "launches must be between 1 and 1000",
     "measure.launches: must be between 1 and 1000"),
    (dict(sizes="1K-4M"), "--sizes '1K-4M' is no size: a range is written A:B, did you mean '1K:4M'?",
     "sizes '1K-4M'", "measure.sizes: '1K-4M'"),
    (dict(env=["A=1", "A=2"]), "--env sets A twice (A=1, A=2)", "env sets A twice", "measure.env: sets A twice"),
    (dict(env={"A": "x\0y"}), "--env holds a NUL character", "env holds a NUL", "measure.env: holds a NUL"),
    (dict(benchmarks="pingpong,bw,pingpong"), "-b/--bench names 'pingpong' more than once",
     "benchmarks names 'pingpong' more than once", "measure.benchmarks: names 'pingpong'"),
    (dict(hosts="a;touch x"), "--hosts 'a;touch x' is not a host name", "hosts 'a;touch x' is not a host name",
     "measure.hosts: 'a;touch x' is not a host name"),
    (dict(hosts=["a"], hostfile="f"), "--hosts and --hostfile both name the hosts",
     "hosts and hostfile both name the hosts", "measure.hosts and measure.hostfile"),
    (dict(bind_to="cores"), "--bind-to unknown value 'cores': did you mean 'core'?", "bind_to unknown value",
     "measure.binding: unknown value"),
])
def test_one_validation_words_the_field_for_each_front_end(values, cli, api, spec):
    for front, message in ((CLI, cli), (API, api), (SPEC, spec)):
        with pytest.raises(UsageError) as e:
            describe(values, front)
        assert message in str(e.value)


def test_an_unknown_keyword_or_key_is_named_with_the_nearest():
    with pytest.raises(UsageError, match="max_tim: unknown keyword: did you mean 'max_time'"):
        describe({"max_tim": 1}, API)
    with pytest.raises(UsageError, match="measure.mapping_by: unknown key: did you mean 'mapping'"):
        parse_spec("[measure]\nmapping_by = \"block\"\n")


@pytest.mark.parametrize("args, fragment", [
    (["--env", "A=1", "--env", "A=2"], "--env sets A twice"),
    (["-b", "pingpong,pingpong"], "names 'pingpong' more than once"),
    (["--env", "A=x\0y"], "holds a NUL character"),
    (["--hosts", "a;touch x", "--submit", "slurm", "--dry-run"], "'a;touch x' is not a host name"),
    (["--sizes", "1K-4M"], "did you mean '1K:4M'?"),
])
def test_nonsense_in_the_description_is_one_line_and_exit_2(args, fragment, tmp_path, capsys):
    from mpiscope.cli import main
    code = main(["run", *args, "--runs-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("mpiscope: error:") and fragment in err and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["run", "--help"]])
def test_start_up_imports_no_scientific_library(argv):
    code = ("import sys\nfrom mpiscope.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pandas', 'numpy', 'scipy', 'matplotlib') if m in sys.modules))" % argv)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"
