"""Issue 46 point 4: tune's description is the one experiment description: its fields set from
tune's flags, the API's keywords and a spec's [measure] table give the same `Description`,
checked by the one validation; a run refuses the fields only tune reads. No launch."""
from __future__ import annotations

import json
import shlex

import pytest

from mpiscope.cli import parser
from mpiscope.commands.tune import description_of
from mpiscope.execute.tune import again, tune_description
from mpiscope.plan.describe import from_json, to_json
from mpiscope.util.errors import UsageError

FLAGS = ["allreduce", "bcast", "-n", "2,4", "--sizes", "8,64K", "--rounds", "3", "--verify-launches", "4",
         "--verify-max-launches", "6", "--live-launches", "0", "--exhaustive", "--algorithms",
         "allreduce=ring,recursive_doubling", "--env", "MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM=mpir",
         "--max-time", "0.1", "--hosts", "a,b", "--ranks-per-node", "2", "--launcher-args", "-launcher ssh -iface v0"]
KEYWORDS = {"benchmarks": ["allreduce", "bcast"], "rank_counts": [2, 4], "sizes": "8,64K", "rounds": 3,
            "verify_launches": 4, "verify_max_launches": 6, "live_launches": 0, "exhaustive": True,
            "algorithms": {"allreduce": ["ring", "recursive_doubling"]},
            "env": {"MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM": "mpir"}, "max_time": 0.1, "hosts": ["a", "b"],
            "ranks_per_node": 2, "launcher_args": "-launcher ssh -iface v0"}
SPEC = """
[measure]
benchmarks = ["allreduce", "bcast"]
rank_counts = [2, 4]
sizes = "8,64K"
rounds = 3
verify_launches = 4
verify_max_launches = 6
live_launches = 0
exhaustive = true
algorithms = {allreduce = ["ring", "recursive_doubling"]}
max_time = 0.1
hosts = ["a", "b"]
ranks_per_node = 2
launcher_args = "-launcher ssh -iface v0"

[measure.env]
MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM = "mpir"
"""


def from_cli(*argv: str):
    return description_of(parser().parse_args(["tune", *argv]))


def test_the_cli_the_api_and_a_spec_give_one_description(tmp_path):
    spec = tmp_path / "tune.toml"
    spec.write_text(SPEC)
    cli = from_cli(*FLAGS)
    assert cli == tune_description(KEYWORDS) == from_cli("--spec", str(spec))
    assert cli.rank_counts == (2, 4) and cli.algorithms == {"allreduce": ("ring", "recursive_doubling")}
    assert cli.launches == 1  # a tune's parts are one launch each; its rounds add launches
    # flags beside a spec win, field by field
    over = from_cli("--spec", str(spec), "--rounds", "5", "-n", "8")
    assert (over.rounds, over.rank_counts, over.sizes) == (5, (8,), "8,64K")
    # what state.json keeps reads back as it was, and names the command that starts it again
    stored = json.loads(json.dumps(to_json(cli)))
    assert from_json(stored, "tune") == tune_description(stored) == cli
    line = again(cli)
    assert line.startswith("mpiscope tune allreduce bcast -n 2,4 --sizes 8,64K") and "--exhaustive" in line
    assert from_cli(*shlex.split(line)[2:]) == cli


def test_tune_defaults_are_its_own():
    d = from_cli()
    assert (d.benchmarks, d.rank_counts, d.sizes, d.max_time, d.rounds, d.live_launches) == \
        (None, None, "8,1K,64K,1M", 0.2, 4, 3)


@pytest.mark.parametrize("argv, said", [
    (["--verify-launches", "4", "--verify-max-launches", "3"], "--verify-max-launches (3) is below --verify-launches (4)"),
    (["--live-launches", "1"], "--live-launches must be 0 (no check) or 2 or more"),
    (["--rounds", "1"], "--rounds must be 2 or more: the race needs two launches"),
    (["-n", "1"], "-n/--ranks expects rank counts of 2 or more"),
    (["--algorithms", "allreduce"], "--algorithms expects COLLECTIVE=ALG,ALG"),
    (["bcast", "--algorithms", "allreduce=ring"], "--algorithms names allreduce, which is not among the collectives"),
    (["allgatherv"], "tune knows no collective 'allgatherv'"),
    (["--platform", "cluster:nodes=2"], "tune takes no --platform"),
])
def test_one_validation_words_tune_s_flags(argv, said):
    with pytest.raises(UsageError) as e:
        from_cli(*argv)
    assert said in str(e.value)


def test_the_api_and_a_spec_word_the_same_problem_in_their_terms(tmp_path):
    with pytest.raises(UsageError, match="^rounds must be 2 or more"):
        tune_description({"rounds": 1})
    with pytest.raises(UsageError, match="tune takes no ci_target"):
        tune_description({"ci_target": 0.05})
    spec = tmp_path / "tune.toml"
    spec.write_text("[measure]\nrounds = 1\n")
    with pytest.raises(UsageError, match="tune.toml: measure.rounds: must be 2 or more"):
        from_cli("--spec", str(spec))
    spec.write_text("[measure]\nci_target = 0.05\n")
    with pytest.raises(UsageError, match="tune takes no measure.ci_target"):
        from_cli("--spec", str(spec))


def test_a_run_refuses_the_fields_only_tune_reads():
    from mpiscope.api import plan_run
    with pytest.raises(UsageError, match="rounds: only `mpiscope tune` reads it"):
        plan_run("pingpong", sizes="8", ranks=2, rounds=3)


def test_resume_refuses_a_spec_beside_it(tmp_path):
    from mpiscope.commands.tune import refuse_options
    with pytest.raises(UsageError, match="leave out -n, --spec"):
        refuse_options(parser().parse_args(["tune", "--resume", str(tmp_path), "-n", "4", "--spec", "x.toml"]))
    refuse_options(parser().parse_args(["tune", "--resume", str(tmp_path)]))  # alone: nothing to refuse
