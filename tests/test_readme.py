"""The README's tables are whole and its question table works as written: every row of the
question table has a question and a command, the command table lists every command and
sub-command the CLI has, and every command line of the question table runs, in order, in one
fresh runs directory on the embedded MPICH (with small sizes; what needs other hosts, Slurm or
Open MPI is mapped to this machine or skipped with the reason)."""
from __future__ import annotations

import argparse
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mpiscope.cli import parser

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def table(heading_row: str) -> list[list[str]]:
    """The rows of the Markdown table that starts with `heading_row`, cells split on unescaped |."""
    lines = README[README.index(heading_row):].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def commands() -> list[str]:
    """`run`, `mpi list`, `study ring`, ...: every command a user can type."""
    def walk(p: argparse.ArgumentParser, prefix: str) -> list[str]:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [prefix]
        return [name for sub in subs for cmd, child in sub.choices.items() for name in walk(child, f"{prefix} {cmd}")]
    return [c.strip() for c in walk(parser(), "")]


def test_the_question_table_has_a_command_for_every_question():
    rows = table("| the question | the command |")
    assert len(rows) >= 8
    for question, *rest in rows:
        assert len(rest) == 1 and "`mpiscope " in rest[0] and "mpiscope" not in question, (question, rest)


def test_the_command_table_lists_every_command():
    listed = " ".join(row[0] for row in table("| command | what it does |"))
    missing = [c for c in commands() if f"`mpiscope {c}" not in listed]
    assert not missing, f"README's Commands table lacks: {missing}"
    assert len(commands()) >= 18


USER_DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "examples").glob("*.toml"))]
# what a user of mpiscope does not have: the development machine's files and the texts the
# experiments were first taken from
ELSEWHERE = re.compile(r"shared/|/work/|/root/|\bthe (?:chapter|newsletter|exercise)\b|exercise's", re.I)


def test_user_docs_stand_alone():
    cited = [f"{path.relative_to(REPO)}:{n}: {line.strip()}" for path in USER_DOCS
             for n, line in enumerate(path.read_text().splitlines(), 1) if ELSEWHERE.search(line)]
    assert not cited, "describe the experiment itself; cite nothing a user does not have:\n" + "\n".join(cited)


# --- the question table, run as written ---------------------------------------------------

QUESTION_LINES = [line for _, cell in table("| the question | the command |")
                  for line in re.findall(r"`mpiscope ([^`]+)`", cell)]

# Flags that only make a command small (fewer sizes, one launch, short points), added to the
# row's own words by the command they belong to; nothing else of a row is changed.
SMALL = {
    "run": ["--launches", "1", "--max-time", "0.01", "--time-budget", "4"],
    "study ring": ["--quick", "--max-words", "256", "--nblocks", "128", "--launches", "1", "--max-time", "0.01"],
    "study grid": ["--sizes", "64K", "--launches", "1", "--max-time", "0.01"],
    "sweep": ["--launches", "1"],
}
RUN_SIZES = ["--sizes", "8,1K,64K"]  # a run's pingpong sizes, shared so that compare finds them
SWITCH_SIZES = ["--sizes", "8:64K:*4"]  # --find-switches fits regimes: enough sizes for one

# What this machine cannot run as written: another host, Slurm.
SKIP = {
    "--hosts": "two hosts need the cluster lane's namespace hosts (tests/cluster/test_run_hosts.py)",
    "--launcher srun": "srun needs a Slurm allocation (tests/cluster/test_run_slurm.py)",
}


@dataclass
class Story:
    """What the commands so far left behind: the runs directory, the runs and sweeps made."""
    cwd: Path
    runs: list[str] = field(default_factory=list)
    specs: dict[str, Path] = field(default_factory=dict)

    def made(self) -> list[str]:
        runs = self.cwd / "mpiscope-runs"
        return sorted(p.name for p in runs.iterdir() if (p / "run.json").is_file()) if runs.is_dir() else []

    def sweep_dir(self) -> str:
        sweeps = sorted((self.cwd / "mpiscope-runs" / "sweeps").iterdir(), key=lambda p: p.stat().st_mtime)
        return str(sweeps[-1])


def toml(value: object) -> str:
    """A TOML value: JSON's strings, numbers and lists are TOML's; tables are written inline."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def small_spec(spec: str, story: Story) -> str:
    """A README spec (a path in this repository) on what this machine runs: the embedded MPICH on
    2 ranks, a few sizes. (Open MPI configurations need the openmpi lane; other factors stay.)"""
    data = tomllib.loads((REPO / spec).read_text())
    data.setdefault("factors", {}).update(mpi="embedded", ranks=2)
    data.setdefault("measure", {}).update(sizes="1:64:2^k-1", max_time=0.01)
    keys = [f"{k} = {toml(v)}" for k, v in data.items() if not isinstance(v, dict)]
    tables = [f"[{k}]\n" + "\n".join(f"{kk} = {toml(vv)}" for kk, vv in v.items())
              for k, v in data.items() if isinstance(v, dict)]
    path = story.specs["SPEC"] = story.cwd / Path(spec).name
    path.write_text("\n".join(keys + tables) + "\n")
    return str(path)


def as_run_here(line: str, story: Story) -> list[str]:
    """The row's command with its placeholders filled from the story so far and the flags that
    make it small."""
    words = shlex.split(line)
    args: list[str] = []
    for w in words:
        if w in ("RUN", "RUN..."):
            args.append(story.runs[-1])
        elif w == "BASELINE":
            args.append(story.runs[0])
        elif w == "CANDIDATE":
            args.append(story.runs[1])
        elif w == "SWEEP_DIR":
            args.append(story.sweep_dir())
        elif w == "SPEC":  # the spec of the sweep before, else an example
            args.append(str(story.specs.get("SPEC") or small_spec("examples/ring-sendrecv.toml", story)))
        elif w.endswith(".toml"):
            args.append(small_spec(w, story))
        elif w == "N":  # -n N: the cores of this machine
            args.append("2")
        else:
            args.append(w)
    command = " ".join(words[:2]) if words[0] in ("study", "mpi") else words[0]
    args += SMALL.get(command, [])
    if command == "run" and "--sizes" not in args:
        args += SWITCH_SIZES if "--find-switches" in args else RUN_SIZES
    if "--submit" in args:
        args.append("--dry-run")  # writes the batch scripts and submits nothing: no Slurm here
    return args


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Story:
    return Story(tmp_path_factory.mktemp("readme"))


@pytest.mark.parametrize("line", QUESTION_LINES)
def test_every_question_runs_as_written(line, cli, story):
    reason = next((why for flag, why in SKIP.items() if flag in line), None)
    if reason:
        pytest.skip(reason)
    args = as_run_here(line, story)
    before = story.made()
    r = cli(*args, cwd=story.cwd, timeout=300)
    # compare says a slowdown beyond --fail-on with 1, which a busy machine may show
    ok = (0, 1) if args[0] == "compare" else (0,)
    assert r.returncode in ok and "Traceback" not in r.stderr, (args, r.stdout[-2000:], r.stderr[-2000:])
    assert not r.stderr.startswith("\n"), "a progress bar left empty lines on a pipe"
    story.runs += [run for run in story.made() if run not in before]
