"""`mpiscope table` on plain runs (no sweep): columns labelled by what differs between them
(here a tuning variable), the latency beside MB/s only for small messages."""
from __future__ import annotations

from io import StringIO
from pathlib import Path

import pandas as pd
import pytest

from mpiscope_test_fixtures.synthetic import saved_id


@pytest.fixture(scope="module")
def two_runs(cli, openmpi_prefix, tmp_path_factory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("table")
    ids = []
    for env in (["--env", "OMPI_MCA_btl=self,sm"], ["--env", "OMPI_MCA_btl=self,tcp"]):
        r = cli("run", "--mpi", "openmpi", "-b", "pingpong", "--sizes", "8,256,4K", "--max-time", "0.05",
                "--runs-dir", str(tmp), "--no-progress", *env)
        assert r.returncode == 0, r.stderr
        ids.append(saved_id(r.stdout))
    return tmp, ids


def test_plain_runs_are_labelled_by_the_variable_that_differs(cli, two_runs):
    tmp, ids = two_runs
    r = cli("table", *ids, "--format", "csv", "--runs-dir", str(tmp))
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(StringIO(r.stdout))
    assert list(df.columns) == ["benchmark", "size_bytes", "env_OMPI_MCA_btl=self,sm MB/s",
                                "env_OMPI_MCA_btl=self,sm us", "env_OMPI_MCA_btl=self,tcp MB/s",
                                "env_OMPI_MCA_btl=self,tcp us"]
    assert list(df["size_bytes"]) == [8, 256, 4096]
    # the TCP path is the slower one at every size (about ten times at small sizes)
    assert (df["env_OMPI_MCA_btl=self,tcp us"] > df["env_OMPI_MCA_btl=self,sm us"]).all()


def test_latency_beside_bandwidth_up_to_the_limit(cli, two_runs):
    tmp, ids = two_runs
    r = cli("table", *ids, "--format", "markdown", "--runs-dir", str(tmp))
    assert r.returncode == 0, r.stderr
    body = [line.strip("|").split("|") for line in r.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row[0].strip() for row in body] == ["8", "256", "4096"]
    assert [all("(" in c for c in row[1:]) for row in body] == [True, True, False]
    r = cli("table", *ids, "--format", "markdown", "--latency-upto", "4096", "--runs-dir", str(tmp))
    assert all("(" in c for line in r.stdout.splitlines() if line.startswith("| 4096")
               for c in line.strip("|").split("|")[1:])


def test_a_run_that_does_not_exist_is_one_line(cli, two_runs):
    tmp, ids = two_runs
    r = cli("table", ids[0], "nosuchrun", "--runs-dir", str(tmp))
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "no run 'nosuchrun'" in r.stderr
