"""The lanes (tests/fixtures/lanes.py) on small test modules run by a pytest of their own: a
test's marks come from the fixtures it uses, through fixtures of fixtures and
request.getfixturevalue, and a fast-lane test that starts MPI, a build or the engine fails
loudly, also when the start happens in a Python it started or its error is swallowed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LANES_PY = Path(__file__).resolve().parent / "fixtures" / "lanes.py"

CONFTEST = f'''
import importlib.util
import sys

import pytest

spec = importlib.util.spec_from_file_location("lanes_under_test", {str(LANES_PY)!r})
lanes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lanes)
pytest_collection_modifyitems = lanes.pytest_collection_modifyitems
pytest_runtest_protocol = lanes.pytest_runtest_protocol
pytest_runtest_makereport = lanes.pytest_runtest_makereport


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    with open("marks.txt", "w") as f:
        for item in session.items:
            print(item.name, *sorted(m.name for m in item.iter_markers()), file=f)


# stand-ins with the names of the real fixtures: the rule reads names, nothing here measures
@pytest.fixture
def mpich_engine():
    return "engine"


@pytest.fixture
def openmpi_prefix():
    return "prefix"


@pytest.fixture
def cli_offline():
    return None


@pytest.fixture
def my_runs(mpich_engine):  # needs MPI through a fixture of a fixture
    return []


@pytest.fixture(params=["mpich_engine", "openmpi_prefix"])
def which(request):
    return request.getfixturevalue(request.param)


@pytest.fixture
def asks(request):
    return request.getfixturevalue("openmpi_prefix")
'''

MARKED = '''
def test_plain():
    pass

def test_offline(cli_offline, tmp_path):
    pass

def test_engine(mpich_engine):
    pass

def test_deep(my_runs):
    pass

def test_asked_by_name(asks):
    pass

def test_asked_by_param(which):
    pass

def test_asks_itself(request):
    request.getfixturevalue("mpich_engine")
'''

GUARDED = '''
import subprocess
import sys

def test_launcher():
    subprocess.run(["/nonexistent/mpiexec", "-n", "2", "x"])

def test_build_swallowed():
    try:
        subprocess.run(["make", "-C", "/nonexistent"])
    except BaseException:
        pass

def test_engine_in_a_child():
    subprocess.run([sys.executable, "-c", "import subprocess; subprocess.run(['/x/mpiscope-engine', '--list'])"])

def test_harmless_child():
    assert subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, text=True).stdout == "1\\n"
'''


def pytest_in(where: Path, *args: str) -> subprocess.CompletedProcess:
    # without this test's own guard: what the inner tests start is theirs to refuse
    env = {k: v for k, v in os.environ.items() if k not in ("MPISCOPE_TEST_LANE_LOG", "PYTHONPATH")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA",
                           "-W", "ignore::pytest.PytestUnknownMarkWarning", *args],
                          cwd=where, env=env, capture_output=True, text=True, timeout=300)


def marked(where: Path) -> dict[str, set[str]]:
    """Each test's name and its marks, as the inner session's collection wrote them."""
    r = pytest_in(where, "--collect-only")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line.split() for line in (where / "marks.txt").read_text().splitlines()]
    return {name: set(marks) for name, *marks in rows}


def test_marks_come_from_the_fixtures_a_test_uses(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_marked.py").write_text(MARKED)
    marks = marked(tmp_path)
    assert marks.pop("test_plain") == marks.pop("test_offline") == {"none"}
    assert marks.pop("test_engine") == marks.pop("test_deep") == marks.pop("test_asks_itself") == {"mpi", "slow"}
    # getfixturevalue(request.param) counts every param: both instances may need Open MPI
    assert marks.pop("test_asked_by_param[mpich_engine]") == marks.pop("test_asked_by_param[openmpi_prefix]") \
        == marks.pop("test_asked_by_name") == {"mpi", "openmpi", "slow"}
    assert marks == {}


def test_a_fast_lane_test_that_starts_mpi_fails_loudly(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_guarded.py").write_text(GUARDED)
    r = pytest_in(tmp_path, "-m", "none")
    outcome = {line.split("::", 1)[1].split()[0]: line.split()[0] for line in r.stdout.splitlines()
               if line.startswith(("PASSED", "FAILED", "ERROR"))}
    assert outcome == {"test_launcher": "FAILED", "test_build_swallowed": "FAILED",
                       "test_engine_in_a_child": "FAILED", "test_harmless_child": "PASSED"}, r.stdout
    assert "launches MPI (mpiexec): /nonexistent/mpiexec -n 2 x" in r.stdout
    assert "compiles (make)" in r.stdout and "runs the engine" in r.stdout
    assert "cli instead of cli_offline" in r.stdout  # the message names the fix
