"""Experiment specs: parsing, matrix and zip expansion, exclusions, errors that name the key and
suggest the right one, and every example in examples/ parsing and expanding."""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpiscope.util.errors import UsageError
from mpiscope.plan.engine import expand_sizes
from mpiscope.plan.spec import expand, load_spec, parse_spec, varying

REPO = Path(__file__).resolve().parents[1]


def configs(text: str) -> list[dict]:
    return [c.factors for c in expand(parse_spec(text))]


def test_matrix_is_every_combination_first_factor_slowest():
    got = configs('[factors]\nmpi = ["a", "b"]\nranks = [2, 4, 8]\n')
    assert got == [{"mpi": m, "ranks": r} for m in ("a", "b") for r in (2, 4, 8)]


def test_zip_group_moves_in_lockstep_and_crosses_the_rest():
    got = configs('[factors]\nmpi = ["a", "b"]\nlauncher_args = ["", "--bind-to none"]\nranks = [2, 4]\n'
                  '[combine]\nzip = [["mpi", "launcher_args"]]\n')
    assert [(g["mpi"], g["launcher_args"], g["ranks"]) for g in got] == [
        ("a", (), 2), ("a", (), 4), ("b", ("--bind-to", "none"), 2), ("b", ("--bind-to", "none"), 4)]


def test_zip_mode_broadcasts_single_levels():
    got = configs('[factors]\nranks = [2, 4]\nmpi = "a"\n[factors.env]\nX = ["1", "2"]\n[combine]\nmode = "zip"\n')
    assert got == [{"ranks": 2, "mpi": "a", "env.X": "1"}, {"ranks": 4, "mpi": "a", "env.X": "2"}]


def test_exclusions_drop_matching_configurations():
    got = configs('[factors]\nmpi = ["a", "b"]\nranks = [2, 4]\n[factors.env]\nX = ["1", "2"]\n'
                  '[[exclude]]\nmpi = "b"\nranks = 4\n[[exclude]]\nenv.X = "2"\nranks = [2]\n')
    assert {(g["mpi"], g["ranks"], g["env.X"]) for g in got} == {("a", 2, "1"), ("a", 4, "1"), ("a", 4, "2"),
                                                                 ("b", 2, "1")}


def test_measure_words_are_the_engines_to_expand_and_varying_factors(mpich_engine):
    spec = parse_spec('[measure]\nsizes = "1:8:2^k-1"\nunits = "words"\n[factors]\nmpi = ["a", "b"]\nranks = 4\n')
    assert expand_sizes(mpich_engine, spec.measure.sizes, spec.measure.units) == [8, 16, 24, 32, 56, 64]
    assert varying(expand(spec)) == ["mpi"]


@pytest.mark.parametrize("text, message", [
    ('[factors]\nrank = [2]\n', "factors.rank: unknown key: did you mean 'ranks'?"),
    ('[measure]\nbenchmark = ["ring"]\n', "measure.benchmark: unknown key: did you mean 'benchmarks'?"),
    ('[measur]\nsizes = "1"\n', "measur: unknown key: did you mean 'measure'?"),
    ('[combine]\nmode = "matrx"\n', "combine.mode: unknown mode 'matrx': did you mean 'matrix'?"),
    ('[factors]\nranks = [0, 2]\n', "factors.ranks[0]: must be at least 1, got 0"),
    ('[factors]\nranks = []\n', "factors.ranks: no levels"),
    ('[factors]\nranks = [2, 2]\n', "factors.ranks: a level appears twice"),
    ('[measure]\nmax_time = -1\n', "measure.max_time: must be a positive number"),
    ('[measure]\nunits = "word"\n', "measure.units: unknown value 'word': did you mean 'words'? use one of bytes, words"),
    ('[factors]\nmpi = ["a", "b"]\nranks = [2, 4, 8]\n[combine]\nzip = [["mpi", "ranks"]]\n',
     "combine.zip[0]: zipped factors need the same number of levels, got mpi: 2, ranks: 3"),
    ('[factors]\nmpi = ["a", "b"]\nranks = [2, 4]\n[combine]\nzip = [["mpi", "rank"]]\n',
     "combine.zip[0]: 'rank' is not a factor of this spec: did you mean 'ranks'?"),
    ('[factors]\nranks = [2, 4]\n[[exclude]]\nrank = 2\n', "exclude[0].rank: not a factor of this spec: did you "
                                                          "mean 'ranks'?"),
    ('[factors]\nlauncher = "sruns"\n', "factors.launcher: unknown value 'sruns': did you mean 'srun'?"),
    ('[factors]\nmapping = ["block", "cylic"]\n', "factors.mapping[1]: unknown value 'cylic': did you mean 'cyclic'?"),
    ('[factors]\nranks = [2, 4]\n[[exclude]]\nranks = 3\n', "exclude[0].ranks: '3' is not a level of factors.ranks"),
    ('[factors]\nranks = [2]\n[[exclude]]\nranks = 2\n', "every configuration is excluded"),
    ('launches = 0\n', "launches: must be between 1 and 1000, got 0"),
    ('[factors]\nlauncher_args = "--mca \'x"\n', "factors.launcher_args: '--mca 'x' cannot be split"),
    ('[factors]\nengine_options = "--npmin 2 :"\n', "factors.engine_options: holds a lone ':'"),
    ('[factors.env]\n"1X" = "a"\n', "factors.env.1X: not a valid environment variable name"),
    ('name = "a/b"\n', "name: 'a/b' cannot name a directory"),
    ('[factors\n', "the spec is not valid TOML"),
])
def test_bad_specs_name_the_key_and_the_fix(text, message):
    with pytest.raises(UsageError) as e:
        expand(parse_spec(text))
    assert message in str(e.value)


def test_sizes_are_checked_by_the_engine_before_anything_runs(cli, tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('[measure]\nsizes = "1:4X"\n[factors]\nranks = 2\n')
    r = cli("sweep", str(spec), "--dry-run", "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "mpiscope: error: configuration c001 (ranks=2): '4X' is not a size: unknown suffix 'X' (use K, M or G)"]
    assert not (tmp_path / "runs").exists()


def test_cli_reports_spec_errors_in_one_line(cli_offline, tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('[factors]\nrnaks = [2, 4]\n')
    r = cli_offline("sweep", str(spec), "--dry-run", "--runs-dir", str(tmp_path))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"mpiscope: error: {spec}: factors.rnaks: unknown key: did you mean 'ranks'? known keys here: mpi, ranks, "
        f"nodes, ranks_per_node, mapping, binding, hosts, hostfile, launcher, launcher_args, engine_options, env"]


names = st.sampled_from(["mpi", "ranks", "binding", "env.A", "env.B"])


def _level(name: str, i: int):
    if name == "binding":
        return ("none", "core", "hwthread")[i]
    return i + 1 if name == "ranks" else f"v{i}"


def _toml_value(v) -> str:
    return str(v) if isinstance(v, int) else f'"{v}"'


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(names, st.integers(1, 3), min_size=1, max_size=5), st.booleans(), st.data())
def test_expansion_size_matches_the_algebra(levels, zipped, data):
    """Matrix: the product of level counts; zip: the common count; an exclusion removes exactly the
    matching combinations."""
    if zipped:
        n = data.draw(st.integers(1, 3))
        levels = {k: (n if data.draw(st.booleans()) else 1) for k in levels}
    lines = ["[factors]"]
    env = {k[4:]: v for k, v in levels.items() if k.startswith("env.")}
    for k, n in levels.items():
        if not k.startswith("env."):
            lines.append(f"{k} = [{', '.join(_toml_value(_level(k, i)) for i in range(n))}]")
    if env:
        lines.append("[factors.env]")
        lines += [f"{k} = [{', '.join(_toml_value(_level(k, i)) for i in range(n))}]" for k, n in env.items()]
    if zipped:
        lines += ["[combine]", 'mode = "zip"']
    got = configs("\n".join(lines) + "\n")
    want = max(levels.values()) if zipped else math.prod(levels.values())
    assert len(got) == want
    assert len({repr(sorted(g.items())) for g in got}) == len(got)
    first = next(iter(levels))
    drop = _level(first, 0)
    excluded = lines + ["[[exclude]]", f"{first} = {_toml_value(drop)}"]
    survivors = [g for g in got if g[first] != drop]
    if survivors:
        assert configs("\n".join(excluded) + "\n") == survivors


def test_every_example_parses_and_expands():
    examples = sorted((REPO / "examples").glob("*.toml"))
    assert len(examples) >= 4
    for path in examples:
        spec = load_spec(path)
        configs_ = expand(spec)
        assert configs_, path
        assert spec.description, f"{path}: say what it reproduces"
        for c in configs_:
            assert set(c.factors) == set(spec.factors)
    # the ring timings side by side: two libraries x two rank counts, sizes in words 2^k-1
    ring = load_spec(REPO / "examples" / "ring-sendrecv.toml")
    assert ring.measure.units == "words" and "2^k-1" in ring.measure.sizes
    assert [tuple(c.factors[k] for k in ("mpi", "ranks")) for c in expand(ring)] == list(
        itertools.product(ring.factors["mpi"], ring.factors["ranks"]))
