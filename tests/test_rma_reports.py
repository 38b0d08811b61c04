"""One-sided (RMA) runs in the reports: the synchronisation modes of one run are columns side by
side in `mpiscope table`, and `mpiscope model` fits put/get latency against size (Hockney) per
mode, refusing to draw one line through several modes."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest


SIZES = [8, 256, 4096]


@pytest.fixture(scope="module")
def rma_run(cli, tmp_path_factory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("rma")
    r = cli("run", "-b", "put_latency,get_latency", "--sizes", ",".join(map(str, SIZES)), "--max-time", "0.05",
            "--engine-args", "--rma-sync fence,lock,flush", "--runs-dir", str(tmp), "--no-progress")
    assert r.returncode == 0, r.stderr
    saved = [line for line in r.stdout.splitlines() if line.startswith("saved in ")]
    return tmp, Path(saved[-1].removeprefix("saved in ").strip()).name


def test_sync_modes_are_columns_side_by_side(cli, rma_run):
    tmp, run = rma_run
    r = cli("table", run, "--format", "csv", "--runs-dir", str(tmp))
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(StringIO(r.stdout))
    # variants in sorted order, as every table sorts benchmark, variant, size (issue 31)
    assert list(df.columns) == ["benchmark", "size_bytes", "fence MB/s", "fence us", "flush MB/s", "flush us",
                                "lock MB/s", "lock us"]
    for bench in ("put_latency", "get_latency"):
        part = df[df["benchmark"] == bench]
        assert list(part["size_bytes"]) == SIZES
        assert part[["fence us", "lock us", "flush us"]].notna().all().all()


def test_hockney_fit_per_mode(cli, rma_run):
    tmp, run = rma_run
    r = cli("model", run, "--benchmark", "put_latency", "--runs-dir", str(tmp))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "3 variants (fence, flush, lock)" in r.stderr and "--variant" in r.stderr
    for mode in ("flush", "lock"):
        r = cli("model", run, "--benchmark", "get_latency", "--variant", mode, "--json", "--runs-dir", str(tmp))
        assert r.returncode == 0, r.stderr
        fit = json.loads(r.stdout)
        assert fit["benchmark"] == f"get_latency {mode}" and fit["sizes"] == len(SIZES)
        [regime] = fit["regimes"]
        assert regime["size_range"] == [SIZES[0], SIZES[-1]] and regime["points"] == len(SIZES)
        assert regime["alpha_us"] is not None
    r = cli("model", run, "--benchmark", "put_latency", "--variant", "pscw", "--runs-dir", str(tmp))
    assert r.returncode == 2 and "no put_latency points of variant 'pscw'" in r.stderr
