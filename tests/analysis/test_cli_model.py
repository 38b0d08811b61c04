"""`mpiscope run` prints the model, `mpiscope model` re-fits stored runs, and
`mpiscope run --find-switches` refines switches in further launches: on the
real engine and the embedded MPICH with 2 ranks (structure, never speed)."""
from __future__ import annotations

import json

import pytest


FAST = ["--max-time", "0.05", "--no-progress"]
TABLE_ROWS = ["Latency Ts (us)", "alpha (cycles)", "Throughput (MB/s)", "Tc (us/byte)",
              "beta (cycles/byte)", "n_1/2 (bytes)"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("model")


@pytest.fixture(scope="module")
def sweep(cli, workdir):
    r = cli("run", "-b", "pingpong", "--sizes", "1:64K", *FAST, "--clock-mhz", "1000", cwd=workdir)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def refined(cli, workdir):
    r = cli("run", "-b", "pingpong", "--sizes", "1:64K", *FAST, "--find-switches", cwd=workdir)
    assert r.returncode == 0, r.stderr
    return r


def first_run_id(stdout: str) -> str:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("saved in "))
    return line.rsplit("/", 1)[-1].strip()


def test_run_prints_the_summary_table_with_the_clock_override(sweep):
    out = sweep.stdout
    assert "Model of pingpong (17 sizes)" in out
    for row in TABLE_ROWS:
        assert row in out
    assert "clock: 1000.0 MHz (override)" in out
    assert "Traceback" not in sweep.stderr


def test_model_json_of_the_stored_run_is_consistent(cli, workdir, sweep):
    r = cli("model", first_run_id(sweep.stdout), "--clock-mhz", "2000", "--json", cwd=workdir)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["benchmark"] == "pingpong" and m["sizes"] == 17
    assert m["clock"] == {"mhz": 2000.0, "source": "override"}
    regimes = m["regimes"]
    assert len(regimes) == len(m["switches"]) + 1
    # regimes tile the measured sizes in order, and each switch sits between two of them
    kept = sorted({2 ** k for k in range(17)} - set(m["spikes"]))
    assert regimes[0]["size_range"][0] == kept[0] and regimes[-1]["size_range"][1] == kept[-1]
    for left, sw, right in zip(regimes, m["switches"], regimes[1:]):
        assert left["size_range"][1] == sw["bracket"][0] < sw["bracket"][1] == right["size_range"][0]
        assert sw["bracket"][0] <= sw["size"] <= sw["bracket"][1]
    for g in regimes:
        why = g["not_identifiable"]  # a figure the sizes do not determine is null, with the reason
        assert g["valid"] == (why["latency"] is None and why["per_byte"] is None)
        if why["latency"] is None:
            assert g["alpha_cycles"] == pytest.approx(g["alpha_us"] * 2000)
            lo, hi = g["alpha_ci"]
            assert 0 < lo <= g["alpha_us"] <= hi  # a latency, on any machine
        else:
            assert g["alpha_us"] is None and g["alpha_ci"] is None and g["n_half_bytes"] is None
        if why["per_byte"] is None:
            assert g["beta_cycles_per_byte"] == pytest.approx(g["beta_us_per_byte"] * 2000)
        else:
            assert g["beta_us_per_byte"] is None and g["bandwidth_MBps"] is None
    assert regimes[0]["not_identifiable"]["latency"] is None  # the smallest messages show the latency


def test_refinement_locates_every_switch_within_a_few_percent(cli, workdir, refined):
    err = refined.stderr
    rid = first_run_id(refined.stdout)
    path = workdir / "mpiscope-runs" / rid
    meta = json.loads((path / "run.json").read_text())
    ref = meta["refinement"]
    assert "Model of pingpong" in refined.stdout
    assert ref["rounds"] == err.count("refinement round ") and ref["tolerance"] == 0.05
    # every launch went into the one run, its records tagged with the round
    assert len(meta["launches"]) == 1 + ref["rounds"]
    recs = [json.loads(ln) for ln in (path / "records.jsonl").read_text().splitlines()]
    rounds = {r["tag"].get("refinement_round") for r in recs if r["type"] == "point"}
    assert rounds == {None, *range(1, ref["rounds"] + 1)}
    r = cli("model", rid, "--json", cwd=workdir)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["sizes"] == len({r["size"] for r in recs if r["type"] == "point"}) >= 17
    if ref["status"] == "located":
        for sw in m["switches"]:
            lo, hi = sw["bracket"]
            assert sw["uncertainty"] <= 0.05 or hi - lo <= 1
    text = cli("model", rid, cwd=workdir).stdout
    for i, _ in enumerate(m["switches"], start=1):
        assert f"switch {i} (regime {i} -> {i + 1})" in text


def test_bad_input_is_one_line_and_status_2(cli, workdir, sweep):
    rid = first_run_id(sweep.stdout)
    for args, words in ((["model", "no-such-run"], "mpiscope runs"),
                        (["model", rid, "--benchmark", "bw"], "-b bw")):
        r = cli(*args, cwd=workdir)
        assert r.returncode == 2
        # the error console wraps at 120 columns when not a terminal: join what it wrapped
        text = " ".join(r.stderr.split())
        assert text.startswith("mpiscope: error:") and text.count("mpiscope: error:") == 1
        assert words in text and "Traceback" not in text
    r = cli("model", rid, "--clock-mhz", "-5", cwd=workdir)
    assert r.returncode == 2 and "MHz" in r.stderr and "Traceback" not in r.stderr
    r = cli("run", "-b", "bw", "--find-switches", *FAST, cwd=workdir)
    assert r.returncode == 2 and "-b pingpong" in r.stderr


def test_a_library_s_own_switches_are_not_a_rate_limiter_s_burst(cli, workdir, sweep):
    """The real check of docs/models.md's burst rule: MPICH's switches over shared memory (no
    bucket anywhere) keep whole samples, so none is called a burst (tests/analysis/test_burst.py
    has the shaped link's records)."""
    r = cli("model", first_run_id(sweep.stdout), "--json", cwd=workdir)
    assert r.returncode == 0, r.stderr
    switches = json.loads(r.stdout)["switches"]
    assert all(sw["burst"] is False for sw in switches)
    assert "burst" not in sweep.stdout
