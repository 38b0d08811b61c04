"""Issue 47, group 1: a name is never a command. A value that reaches make or a batch script is
passed so that neither can expand it, or refused in one line; every case for real (make, bash)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mpiscope.execute.submit import BatchJob
from mpiscope.mpi.build import build_engine
from mpiscope.util import paths
from mpiscope.util.errors import MpiscopeError

# Each would leave its marker file behind if a shell or make ran it.
HOSTILE = ["$(shell touch {m}1)", "$(touch {m}2)", "`touch {m}3`", "x; touch {m}4 #", "it's \"$HOME\" %j"]


def markers(where: Path) -> list[Path]:
    return sorted(where.glob("marker*"))


@pytest.fixture
def engine_src(tmp_path) -> Path:
    src = tmp_path / "engine"
    shutil.copytree(paths.engine_sources(), src, ignore=shutil.ignore_patterns("build"))
    return src


@pytest.mark.parametrize("name", HOSTILE + ["plain $(dir x)", "with space"])
def test_a_home_make_cannot_name_is_refused_and_runs_nothing(cli, tmp_path, name):
    home = tmp_path / name.format(m=tmp_path / "marker")
    r = cli("run", "--sizes", "1", "-b", "pingpong", env={"MPISCOPE_HOME": str(home)}, cwd=tmp_path)
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "make cannot build into" in said and "MPISCOPE_HOME" in said, said
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not markers(tmp_path) and not list(tmp_path.rglob("mpiscope-engine"))


def test_an_mpicc_path_reaches_make_as_one_word(mpich_mpicc, engine_src, tmp_path, monkeypatch):
    """A compiler under a prefix named with every hostile form: make and the recipe's shell
    call exactly that file, and run nothing the name says."""
    monkeypatch.setenv("MPISCOPE_HOME", str(tmp_path / "home"))
    prefix = tmp_path / " ".join(h.format(m=tmp_path / "marker") for h in HOSTILE)
    (prefix / "bin").mkdir(parents=True)
    called = tmp_path / "called"
    mpicc = prefix / "bin" / "mpicc"
    mpicc.write_text(f'#!/bin/sh\nprintf "%s\\n" "$0" >> "{called}"\nexit 1\n')
    mpicc.chmod(0o755)
    with pytest.raises(MpiscopeError, match="building the engine failed"):
        build_engine(mpicc, engine_src)
    assert not markers(tmp_path)
    assert set(called.read_text().splitlines()) == {str(mpicc)}  # -show, then make's recipes


def test_an_mpicc_path_with_a_line_break_is_refused(mpich_mpicc, engine_src, tmp_path, monkeypatch):
    monkeypatch.setenv("MPISCOPE_HOME", str(tmp_path / "home"))
    mpicc = tmp_path / "a\ntouch marker" / "bin" / "mpicc"
    mpicc.parent.mkdir(parents=True)
    mpicc.symlink_to(mpich_mpicc)
    with pytest.raises(MpiscopeError, match="line break") as e:
        build_engine(mpicc, engine_src)
    assert "\n" not in str(e.value)
    assert not markers(tmp_path)


def test_a_relative_home_builds_into_itself(mpich_mpicc, engine_src, tmp_path, monkeypatch):
    """make runs in the engine sources: a relative home must not build there instead."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPISCOPE_HOME", "rel-home")
    engine = build_engine(mpich_mpicc, engine_src)
    assert engine.is_file() and (tmp_path / "rel-home" / "builds") in engine.parents
    assert not (engine_src / "rel-home").exists()


# -- batch scripts -------------------------------------------------------------------------------

def job(where: Path, marker: Path, **kw) -> BatchJob:
    return BatchJob(name="mpiscope-x", command=["touch", str(where / "ran")], ranks=2, time_limit_s=60,
                    log_dir=kw.get("log_dir", where), workdir=kw.get("workdir", where),
                    sbatch_args=kw.get("sbatch_args", []), env={"MPISCOPE_HOME": f"$(touch {marker}0)\n"})


@pytest.mark.parametrize("field", ["log_dir", "workdir", "sbatch_args"])
def test_a_line_break_in_a_batch_path_is_refused(tmp_path, field):
    value = ["--comment=a\ntouch marker"] if field == "sbatch_args" else tmp_path / "a\ntouch marker"
    with pytest.raises(MpiscopeError, match="line break would end the #SBATCH line") as e:
        job(tmp_path, tmp_path / "marker", **{field: value}).script()
    assert "rename the directory, or give another --runs-dir or --sbatch-args" in str(e.value)
    assert "\n" not in str(e.value)


def test_a_batch_script_runs_only_its_command(tmp_path):
    """Paths with quotes, blanks, `#`, `%` and every shell form go into the #SBATCH lines as
    sbatch words (double-quoted, `"` escaped, a % of the log directory doubled; tests/cluster/
    test_batch_names.py has a real sbatch read them), and bash runs the script's command alone."""
    name = " ".join(h.format(m=tmp_path / "marker") for h in HOSTILE)
    odd = tmp_path / name
    odd.mkdir(parents=True)
    script = job(tmp_path, tmp_path / "marker", log_dir=odd, workdir=odd, sbatch_args=["--comment=a b#c"]).script()
    quoted = str(odd).replace('"', '\\"')
    assert f'#SBATCH "--output={quoted.replace("%", "%%")}/slurm-%j.out"' in script.splitlines()
    assert f'#SBATCH "--chdir={quoted}"' in script.splitlines()
    assert '#SBATCH "--comment=a b#c"' in script.splitlines()
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    subprocess.run(["bash", str(path)], check=True, cwd=tmp_path, timeout=30)
    assert (tmp_path / "ran").is_file() and not markers(tmp_path)


def test_a_backslash_in_the_log_directory_is_refused(tmp_path):
    """sbatch expands no %j in an --output holding a backslash: every job would share one log."""
    with pytest.raises(MpiscopeError, match="sbatch reads a backslash in --output"):
        job(tmp_path, tmp_path / "marker", log_dir=tmp_path / "a\\b").script()
