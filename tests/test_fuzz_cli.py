"""Property-based fuzzing of every command's argument parser and of the record and run.json
readers (issue 18): whatever the input, mpiscope ends with exit 0 or a one-line error and exit 2
(never a traceback, never a hang), and an option given a value it cannot take is refused, not
silently accepted. Nothing here measures: a command that gets as far as launching raises
`Launched` instead (the real engine still plans every launch, so its own checks run)."""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpiscope import cli
from mpiscope.commands import options
from mpiscope_test_fixtures.synthetic import measured_run

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Launched(Exception):
    """A command got as far as measuring, submitting or installing."""


@pytest.fixture(autouse=True)
def no_launch(monkeypatch, mpiscope_home):
    def refuse(*a, **k):
        raise Launched
    from mpiscope.execute import session
    from mpiscope.execute import submit
    from mpiscope.execute import probe
    from mpiscope.mpi import manage
    monkeypatch.setattr(session.Session, "run", refuse)
    monkeypatch.setattr(session.Session, "resume", refuse)
    monkeypatch.setattr(session.Session, "steps", refuse)  # a sweep's and run --vs's runs, side by side
    monkeypatch.setattr(session.Session, "resume_steps", refuse)
    monkeypatch.setattr(submit, "submit", refuse)
    monkeypatch.setattr(submit, "submit_sweep", refuse, raising=False)
    monkeypatch.setattr(manage, "add", refuse)
    monkeypatch.setattr(manage, "remove", refuse)
    monkeypatch.setattr(probe, "gather", refuse)  # doctor: its launches


def commands() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every command path (run, study grid, mpi show ...) and its parser."""
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(path: tuple[str, ...], p: argparse.ArgumentParser) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found[path] = p
        for s in subs:
            for name, child in s.choices.items():
                walk(path + (name,), child)
    walk((), cli.parser())
    return found


COMMANDS = commands()
CHECKED = {options.positive_float: ["0", "-1", "nan", "inf", "-inf", "x", ""],
           options.nonneg_float: ["-1", "nan", "inf", "x", ""],
           options.positive_int: ["0", "-3", "1.5", "x", ""],
           options.nonneg_int: ["-1", "1.5", "nan", "x", ""],
           options.names: ["", ",", " , "]}
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=12)
NUMBERS = st.sampled_from(["0", "-1", "1e400", "nan", "inf", "-inf", "2147483648", "1e-300", "9" * 30, "0x10"])
VALUES = st.one_of(TEXT, NUMBERS, st.sampled_from(["", "-", "--", "=", ",", "1:", ":", "*", "latest", "nosuchrun"]))


def option_actions(path: tuple[str, ...]) -> list[argparse.Action]:
    return [a for a in COMMANDS[path]._actions if a.option_strings and a.dest not in ("help", "runs_dir")]


def call(argv: list[str]) -> int | str:
    """Exit status of mpiscope in this process, or 'launched'."""
    try:
        return cli.main(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    except Launched:
        return "launched"


@st.composite
def any_invocation(draw) -> tuple[tuple[str, ...], list[str]]:
    """A command and a jumble of its own option names and odd values."""
    path = draw(st.sampled_from(sorted(COMMANDS)))
    names = [s for a in option_actions(path) for s in a.option_strings]
    tokens = draw(st.lists(st.one_of(st.sampled_from(names or ["--x"]), VALUES), max_size=6))
    return path, tokens


@st.composite
def bad_invocation(draw) -> tuple[list[str], str]:
    """A command with one option given a value it cannot take (a checked number out of range, a
    choice that is not one), other options absent."""
    candidates = [(path, a) for path in sorted(COMMANDS) for a in option_actions(path)
                  if a.type in CHECKED or a.choices]
    path, action = draw(st.sampled_from(candidates))
    if action.type in CHECKED:
        value = draw(st.sampled_from(CHECKED[action.type]))
    else:
        value = draw(TEXT.filter(lambda v: v not in action.choices))
    return [*path, *_positionals(path), f"{action.option_strings[-1]}={value}"], action.option_strings[-1]


def _positionals(path: tuple[str, ...]) -> list[str]:
    """Something for each required positional (runs that do not exist are refused later anyway)."""
    return ["nosuchrun" if a.dest not in ("spec", "config", "what", "name") else "x"
            for a in COMMANDS[path]._actions if not a.option_strings and a.nargs not in ("?", "*")
            and not isinstance(a, argparse._SubParsersAction)]


@SETTINGS
@given(case=any_invocation())
def test_no_invocation_raises(case, mpich_engine, tmp_path_factory, capsys):
    path, tokens = case
    takes_runs_dir = any("--runs-dir" in a.option_strings for a in COMMANDS[path]._actions)
    runs = ["--runs-dir", str(tmp_path_factory.mktemp("runs"))] if takes_runs_dir else []
    code = call([*path, *tokens, *runs])
    assert code in (0, 1, 2, 130, "launched"), (path, tokens, code)
    assert "Traceback" not in capsys.readouterr().err


@SETTINGS
@given(case=bad_invocation())
def test_a_value_an_option_cannot_take_is_refused(case, tmp_path_factory, capsys):
    argv, option = case
    code = call(argv)
    err = capsys.readouterr().err
    assert code == 2, (argv, code, err)
    assert "Traceback" not in err


# -- readers ---------------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(TEXT, kids, max_size=3), max_leaves=8)
FIELDS = ["type", "benchmark", "size", "ranks", "variant", "time_us", "tag", "samples_us", "world_size", "limit_s",
          "family", "pairs", "check", "hosts", "reason", "schema_version", "participants", "busbw_factor"]
RECORD_LIKE = st.fixed_dictionaries(
    {"type": st.sampled_from(["context", "point", "skip", "timeout", "failure", "end", "plan", "x"])},
    optional={k: JSON | st.sampled_from([-5, 1e400, "two", 8, "pingpong", [], {}]) for k in FIELDS if k != "type"})
LINE = st.one_of(RECORD_LIKE.map(json.dumps), JSON.map(json.dumps), TEXT)
RUN_FIELDS = ["id", "format", "status", "started", "pid", "host", "mpi", "parts", "launches", "points", "warnings",
              "timeouts", "factors", "sweep", "extra", "plan", "launcher_command", "error"]
RUN_JSON = st.one_of(JSON, st.dictionaries(st.sampled_from(RUN_FIELDS), JSON | st.sampled_from([2, "running", [{}]]),
                                           max_size=6)).map(json.dumps)


@pytest.fixture(scope="module")
def good_run(cli, tmp_path_factory) -> Path:
    return measured_run(cli, tmp_path_factory.mktemp("good"), "-b", "pingpong", "-n", "2", "--sizes", "1:1K",
                        "--reps", "5", "--launches", "1")


def damaged(good_run: Path, where: Path, lines: list[str] | None, run_json: str | None) -> Path:
    run = where / good_run.name
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(good_run, run)
    if lines is not None:
        with open(run / "records.jsonl", "a") as f:
            f.write("\n".join(lines))  # the last one without its newline: a cut line
    if run_json is not None:
        (run / "run.json").write_text(run_json)
    return run


@SETTINGS
@given(lines=st.lists(LINE, min_size=1, max_size=5))
def test_damaged_records_are_read_without_failing(lines, good_run, tmp_path_factory, capsys):
    from mpiscope.records import read_records
    from mpiscope.results.table import tidy
    from mpiscope.store.runs import Run
    where = tmp_path_factory.mktemp("d")
    run = damaged(good_run, where, lines, None)
    recs = read_records(run / "records.jsonl")
    assert recs.records and len(recs.problems) <= len(lines)
    tidy([Run(run)])
    capsys.readouterr()
    for argv in (["show", str(run)], ["export", str(run), "--format", "json", "-o", str(where / "x.json")]):
        code = call(argv)
        assert code in (0, 2), argv
        err = capsys.readouterr().err
        assert "Traceback" not in err
        if code == 0 and recs.problems:  # damage skipped is said, naming the file and line
            assert "warning:" in err and "records.jsonl line" in err, (argv, err)


@SETTINGS
@given(text=RUN_JSON)
def test_a_damaged_run_json_is_read_without_failing(text, good_run, tmp_path_factory, capsys):
    from mpiscope.store.runs import Run, shown_status
    where = tmp_path_factory.mktemp("j")
    run = damaged(good_run, where, None, text)
    meta = Run(run).meta()
    shown_status(meta)
    capsys.readouterr()
    for argv in (["runs", "--runs-dir", str(where)], ["show", str(run)], ["table", str(run)],
                 ["run", "--resume", str(run)]):
        code = call(argv)
        assert code in (0, 2, "launched"), argv
        err = capsys.readouterr().err
        assert "Traceback" not in err
        if code == 0 and meta.status == "unreadable":  # a run.json not read is said, not passed over
            assert "warning:" in err and "run.json" in err, (argv, err)


def test_an_import_of_a_link_that_loops_is_one_line(tmp_path, capsys):
    """Found by bench/fuzz's reader class: resolving the link raised RuntimeError, a traceback."""
    loop = tmp_path / "osu.txt"
    loop.symlink_to(loop.name)
    assert call(["import", str(loop), "--mpi-label", "x", "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "loops" in err
