"""Engine builds: cached by sources + compiler, rebuilt when a source changes, errors shown with the command."""
import shutil
import time

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
