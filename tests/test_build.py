"""Engine builds: cached by sources + compiler, rebuilt when a source changes, errors shown with the command."""
import shutil
import time
from pathlib import Path

import pytest

from mpiscope.util import paths
from mpiscope.mpi.build import build_engine


@pytest.fixture
def engine_copy(tmp_path, monkeypatch):
    src = tmp_path / "engine"
    shutil.copytree(paths.engine_sources(), src, ignore=shutil.ignore_patterns("build"))
    monkeypatch.setenv("MPISCOPE_HOME", str(tmp_path / "home"))
    return src


def test_second_build_is_a_cache_hit_and_an_edit_rebuilds(engine_copy, mpich_mpicc):
    first = build_engine(mpich_mpicc, engine_copy)
    stamp = first.stat().st_mtime_ns
    t0 = time.monotonic()
    assert build_engine(mpich_mpicc, engine_copy) == first
    assert time.monotonic() - t0 < 1.0
    assert first.stat().st_mtime_ns == stamp
    with open(engine_copy / "src" / "main.c", "a") as f:
        f.write("\n/* a change */\n")
    second = build_engine(mpich_mpicc, engine_copy)
    assert second != first and second.is_file() and first.is_file()


def test_compiler_error_shows_the_command(cli, engine_copy, tmp_path):
    with open(engine_copy / "src" / "main.c", "a") as f:
        f.write("\nthis is not C;\n")
    r = cli("run", "--sizes", "1", env={"MPISCOPE_ENGINE_SRC": str(engine_copy)}, cwd=tmp_path)
    assert r.returncode == 2
    assert "building the engine failed" in r.stderr
    assert f"-C {engine_copy} MPICC=" in r.stderr
    assert "error" in r.stderr.split("building the engine failed", 1)[1]
    assert "Traceback" not in r.stderr
    assert not list((tmp_path / "home" / "builds").glob("*/mpiscope-engine"))


def test_asking_a_wrapper_its_compile_line_leaves_nothing_where_mpiscope_runs(tmp_path, monkeypatch):
    """A wrapper that passes a flag it does not know on to the compiler links an a.out where it
    runs (SimGrid's smpicc for -v): asked in a directory of its own, it leaves none here."""
    from mpiscope.mpi.build import wrapper_show
    wrapper = tmp_path / "bin" / "ccwrap"  # not named mpicc: the fast lane runs no compiler
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\n[ "$1" = -showme ] && echo "cc -I/inc" || : > a.out\n')
    wrapper.chmod(0o755)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert wrapper_show(wrapper) == "cc -I/inc"
    assert wrapper_show(Path("..") / "bin" / "ccwrap") == "cc -I/inc"  # a relative path: from here
    assert list(here.iterdir()) == []
