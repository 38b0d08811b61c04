"""mpiscope history (docs/history.md): the detector as wired on synthetic series with known steps
and noise, the context difference at a change point, --fail-on's exit codes, series kept apart by
platform, disturbed runs kept apart, and an imported OSU series."""
from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from mpiscope.records import Context
from mpiscope.records.model import Control, ControlFigure, HostFacts
from mpiscope.results.changes import analyse
from mpiscope.results.series import Obs, RunSummary, Series
from mpiscope_test_fixtures.synthetic import launch_point, stored_run

REPO = Path(__file__).resolve().parents[1]
KEY = ("platform", ("pingpong", 65536, 2, None), ())


def synthetic_series(rng: np.random.Generator, runs: int = 20, step_at: int | None = None, step: float = 1.0,
                     run_sd: float = 0.03, launch_se: float = 0.02) -> Series:
    """A point's runs: a level of 10 us (times `step` from run `step_at`), a run effect of
    `run_sd` and each run's own error `launch_se` (log scale), 3 launches a run."""
    out = []
    for i in range(runs):
        level = math.log(10.0) + (math.log(step) if step_at is not None and i >= step_at else 0.0)
        m = math.exp(level + run_sd * rng.standard_normal() + launch_se * rng.standard_normal())
        half = 4.303 * launch_se
        out.append(RunSummary(f"r{i:03d}", f"2026-11-{1 + i:02d}T00:00:00",
                              {KEY: Obs(m, m * math.exp(-half), m * math.exp(half), launch_se, 3)}))
    return Series(KEY, tuple(out))


def test_detector_false_alarms_and_power():
    """200 series of 20 unchanged runs: at most 10 % with any change point (the newest run's
    test alone runs at alpha); 100 series stepped 1.6x at run 12: found at run 12 in all; 100
    stepped 1.2x with a 5 % run effect: found within one run in at least 90 %."""
    rng = np.random.default_rng(48)
    null = analyse([synthetic_series(rng) for _ in range(200)])
    assert sum(bool(h.changes) for h in null) <= 20
    big = analyse([synthetic_series(rng, step_at=12, step=1.6) for _ in range(100)])
    assert all(any(c.at == 12 and c.slower and not c.newest for c in h.changes) for h in big)
    assert all(1.4 < c.verdict.ratio < 1.8 for h in big for c in h.changes if c.at == 12)
    small = analyse([synthetic_series(rng, step_at=12, step=1.2, run_sd=0.05) for _ in range(100)])
    assert sum(any(abs(c.at - 12) <= 1 and c.slower for c in h.changes) for h in small) >= 90


def test_splits_are_ruptures_own():
    """The split search from prefix sums chooses what ruptures' own per-position loop chooses,
    ties and all, on random series with and without steps."""
    import ruptures
    from mpiscope.results.changes import MIN_SEGMENT, Binseg, WeightedL2
    rng = np.random.default_rng(11)
    for n in rng.integers(4, 80, 150):
        y = rng.normal(0, 0.05, n) + np.where(np.arange(n) >= rng.integers(0, n), rng.choice([0, 0.1, 0.5]), 0)
        signal = np.column_stack([np.round(y, int(rng.integers(1, 4))), rng.uniform(10, 1000, n)])
        pen = float(rng.choice([0.5, 4 * math.log(n), 50]))
        ours = Binseg(custom_cost=WeightedL2(), min_size=MIN_SEGMENT, jump=1).fit(signal).predict(pen=pen)
        theirs = ruptures.Binseg(custom_cost=WeightedL2(), min_size=MIN_SEGMENT, jump=1).fit(signal).predict(pen=pen)
        assert ours == theirs, (n, pen)


def test_a_level_within_the_margin_is_no_change():
    """A 3 % step on runs that agree to 0.5 %: the detector finds it, the verdict's margin (5 %)
    keeps it out."""
    rng = np.random.default_rng(7)
    hs = analyse([synthetic_series(rng, step_at=10, step=1.03, run_sd=0.0, launch_se=0.005) for _ in range(20)])
    assert not any(h.changes for h in hs)


def test_newest_run_alone_is_a_change_others_wait():
    rng = np.random.default_rng(3)
    (h,) = analyse([synthetic_series(rng, step_at=19, step=1.5)])
    (c,) = h.changes
    assert c.newest and c.at == 19 and c.slower


# -- stored runs ------------------------------------------------------------------------------

def _control(launch: int, handoff: float) -> Control:
    def figure(median: float) -> ControlFigure:
        samples = tuple(median * (1 + 0.01 * k) for k in (-2, -1, 0, 1, 2))
        return ControlFigure(median, samples[0], samples[-1], samples)
    return Control(reps=5, ranks=(0, 1), compute_us=figure(52.0), copy_us=figure(100.0), handoff_us=figure(handoff),
                   tag={"launch": launch})


def _store(runs_dir: Path, medians: list[float], env_from: int | None = None, library: str = "MPICH Version: 5.0.2",
           hosts: tuple[str, ...] = ("vm",), busy: tuple[int, ...] = (), handoff: list[float] | None = None,
           kernels: list[str] | None = None, switch: tuple[int, int] | None = None) -> list[str]:
    """One run per median (pingpong 64 KiB, 3 launches 1 % apart); from run `env_from` the ranks'
    environment holds MPIR_CVAR_CH4_CMA_ENABLE=0; runs in `busy` have every launch disturbed;
    `handoff`: each run's machine-state control (its cache-line handoff, us); `kernels`: each
    run's kernel release on every host; `switch`: (run, launch) whose control's handoff is 4x
    the run's and whose point is 1.8x slower (the machine's other state in one launch)."""
    ids = []
    for i, m in enumerate(medians):
        env = {"MPIR_CVAR_CH4_CMA_ENABLE": "0"} if env_from is not None and i >= env_from else {}
        records = []
        for launch in range(3):
            facts = tuple(HostFacts(h, kernels[i], "Intel(R) Xeon(R) Gold 6230", "performance") for h in hosts
                          ) if kernels else ()
            records.append(Context(world_size=2, hosts=hosts, engine_version="0.1.0", mpi_library_version=library,
                                   env=env, host_facts=facts, tag={"launch": launch}))
            switched = switch == (i, launch)
            if handoff is not None:
                records.append(_control(launch, handoff[i] * (4 if switched else 1)))
            p = launch_point(m * (1 + 0.01 * (launch - 1)) * (1.8 if switched else 1), launch, size=65536)
            if i in busy:  # a switch for every event of the point: the disturbance rule's "machine busy"
                from dataclasses import replace
                p = replace(p, disturbance={"nivcsw": [2000, 2000], "nvcsw": [0, 0]})
            records.append(p)
        ids.append(stored_run(runs_dir, records).id)
    return ids


def _medians(runs: int, step_at: int | None = None, step: float = 1.0, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return [4.0 * (step if step_at is not None and i >= step_at else 1.0) * math.exp(0.02 * rng.standard_normal())
            for i in range(runs)]


def test_change_named_with_what_changed(tmp_path, cli_offline):
    ids = _store(tmp_path, _medians(20, 12, 1.7), env_from=12)
    r = cli_offline("history", str(tmp_path))
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if " since run " in x)
    assert line.startswith("pingpong 64 KiB ") and "x slower" in line, line
    assert 1.6 < float(line.split()[3].rstrip("x")) < 1.8, line
    assert f"since run {ids[12]} " in line
    assert "MPIR_CVAR_CH4_CMA_ENABLE=0 appeared in the environment" in line
    assert "1 series, 1 change point(s)" in r.stdout


def test_json_holds_the_change_and_the_series(tmp_path, cli_offline):
    import json
    ids = _store(tmp_path, _medians(20, 12, 1.7), env_from=12, busy=(3,))
    r = cli_offline("history", str(tmp_path), "--json", "--fail-on", "5%")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert d["schema"] == 1 and d["failed"] is False and [x["id"] for x in d["runs"]] == ids
    (s,) = d["series"]
    assert (s["benchmark"], s["size"], s["ranks"], s["runs"]) == ("pingpong", 65536, 2, 20)
    assert [x["run"] for x in s["kept_apart"]] == [ids[3]] and s["kept_apart"][0]["why"].startswith("disturbed")
    assert [(x["from"], x["to"]) for x in s["segments"]] == [(ids[0], ids[11]), (ids[12], ids[19])]
    (c,) = s["changes"]
    assert c["run"] == ids[12] and c["verdict"] == "slower" and 1.6 < c["ratio"] < 1.8 and not c["newest"]
    assert c["ratio_low"] < c["ratio"] < c["ratio_high"] and d["changes"] == 1
    assert "MPIR_CVAR_CH4_CMA_ENABLE=0 appeared in the environment" in c["changed"]
    slowed = tmp_path / "slowed"
    _store(slowed, _medians(12, 11, 1.5))
    r = cli_offline("history", str(slowed), "--json", "--fail-on", "5%")
    assert r.returncode == 1 and json.loads(r.stdout)["failed"] is True


def test_kernel_change_named(tmp_path, cli_offline):
    """The host's kernel changed with the level, nothing else: the kernel is named; the CPU model
    and governor, the same on every run, are not."""
    kernels = ["6.8.0-45-generic"] * 12 + ["6.8.0-47-generic"] * 8
    ids = _store(tmp_path, _medians(20, 12, 1.7), kernels=kernels)
    r = cli_offline("history", str(tmp_path))
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if " since run " in x)
    assert f"since run {ids[12]} " in line and line.endswith(": kernel 6.8.0-45-generic -> 6.8.0-47-generic"), line


def test_change_placed_where_the_facts_changed_when_its_first_runs_were_kept_apart(tmp_path, cli_offline):
    """The variable appeared at run 12, whose runs 12-14 were disturbed: the change is since run
    12, measured from run 15; a level change without a recorded one stays at its first clean run."""
    ids = _store(tmp_path / "named", _medians(20, 12, 1.7), env_from=12, busy=(12, 13, 14))
    r = cli_offline("history", str(tmp_path / "named"))
    line = next(x for x in r.stdout.splitlines() if " since run " in x)
    assert f"since run {ids[12]} (" in line and f"(measured from run {ids[15]}: the runs between were kept apart)" in line
    assert "MPIR_CVAR_CH4_CMA_ENABLE=0 appeared in the environment" in line
    ids = _store(tmp_path / "unnamed", _medians(20, 12, 1.7), busy=(12, 13, 14))
    r = cli_offline("history", str(tmp_path / "unnamed"))
    line = next(x for x in r.stdout.splitlines() if " since run " in x)
    assert f"since run {ids[15]} (" in line and "measured from" not in line, line


def test_fail_on_exit_codes(tmp_path, cli_offline):
    quiet = tmp_path / "quiet"
    _store(quiet, _medians(12))
    assert cli_offline("history", str(quiet), "--fail-on", "5%").returncode == 0
    slowed = tmp_path / "slowed"
    _store(slowed, _medians(12, 11, 1.5))
    r = cli_offline("history", str(slowed), "--fail-on", "5%")
    assert r.returncode == 1 and "newest run" in r.stderr, r.stdout + r.stderr
    assert "the newest run alone" in r.stdout
    assert cli_offline("history", str(slowed), "--fail-on", "60%").returncode == 0  # 1.5x is within 60 %
    faster = tmp_path / "faster"
    _store(faster, _medians(12, 11, 0.6))
    assert cli_offline("history", str(faster), "--fail-on", "5%").returncode == 0  # a speed-up fails nothing
    for bad in (("--fail-on", "5"), ("--since", "yesterday"), ("--sizes", "64Q"), ("--alpha", "2")):
        r = cli_offline("history", str(slowed), *bad)
        assert r.returncode == 2 and r.stderr.startswith("mpiscope: error:") and "Traceback" not in r.stderr, bad
    r = cli_offline("history", str(slowed), "-b", "allreduce")
    assert r.returncode == 2 and "matches" in r.stderr


def test_series_kept_apart_by_platform(tmp_path, cli_offline):
    """Runs of another library vendor or other hosts start series of their own: a 2x difference
    between MPICH and Open MPI runs interleaved in time is no change point."""
    _store(tmp_path, _medians(8, seed=1))
    _store(tmp_path, [2 * m for m in _medians(8, seed=2)], library="Open MPI v5.0.11")
    _store(tmp_path, [3 * m for m in _medians(8, seed=3)], hosts=("other",))
    r = cli_offline("history", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "3 series, 0 change point(s)" in r.stdout
    assert "MPICH on vm" in r.stdout and "Open MPI on vm" in r.stdout and "MPICH on other" in r.stdout


def test_disturbed_runs_shown_apart_not_as_changes(tmp_path, cli_offline):
    medians = _medians(20)
    for i in (8, 9, 10):
        medians[i] *= 3
    _store(tmp_path, medians, busy=(8, 9, 10))
    r = cli_offline("history", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "0 change point(s)" in r.stdout and "3 run estimates kept apart" in r.stdout
    assert "×××" in r.stdout


def test_runs_in_another_state_of_the_machine_shown_apart(tmp_path, cli_offline):
    """Runs 6 and 7 met the machine in its other state (the control's handoff 4x slower) and
    measured the point 1.8x slower: kept apart as '~', no change point."""
    medians, handoff = _medians(16), [0.07] * 16
    for i in (6, 7):
        medians[i] *= 1.8
        handoff[i] = 0.28
    _store(tmp_path, medians, handoff=handoff)
    r = cli_offline("history", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "0 change point(s)" in r.stdout and "2 run estimates kept apart" in r.stdout and "~~" in r.stdout


def test_a_launch_in_another_state_is_left_out_of_its_run(tmp_path):
    """Run 6's last launch met the machine in its other state (its control's handoff 4x the run's,
    the point 1.8x): the run's estimate is that of its two other launches, as for a disturbed
    launch, so the launch cannot pull the run towards a level it did not measure."""
    from mpiscope.results.series import summarize
    from mpiscope.store.runs import Run
    medians = _medians(16)
    ids = _store(tmp_path, medians, handoff=[0.07] * 16, switch=(6, 2))
    (obs,) = summarize(Run(tmp_path / ids[6])).points.values()
    assert obs.launches == 2 and obs.median == pytest.approx(medians[6] * math.sqrt(0.99 * 1.0), rel=1e-9)
    (obs,) = summarize(Run(tmp_path / ids[5])).points.values()
    assert obs.launches == 3


def test_since_narrows(tmp_path, cli_offline):
    from mpiscope.store.runs import Run
    ids = _store(tmp_path, _medians(10))
    for k, rid in enumerate(ids):
        Run(tmp_path / rid).update(started=f"2026-11-{10 + k:02d}T00:00:00.000000Z")
    r = cli_offline("history", str(tmp_path), "--since", "2026-11-15")
    assert r.returncode == 0, r.stderr
    assert "5 runs from 2026-11-15 to 2026-11-19" in r.stdout


def test_imported_osu_series(tmp_path, cli_offline):
    """Dated copies of a real OSU latency output, the last six with every figure 1.5x: one series
    of its own, a change at the first slow file for every size."""
    sample = (REPO / "tests" / "data" / "imports" / "osu-7.4_latency_mpich.txt").read_text().splitlines()
    rng = np.random.default_rng(5)
    for day in range(1, 15):
        rows = []
        for row in sample:
            if row.startswith("#") or not row.strip():
                rows.append(row)
                continue
            size, value = row.split()
            v = float(value) * (1.5 if day >= 9 else 1.0) * math.exp(0.02 * rng.standard_normal())
            rows.append(f"{size:<10}{v:>18.2f}")
        (tmp_path / f"latency-2026-11-{day:02d}.txt").write_text("\n".join(rows) + "\n")
    r = cli_offline("history", str(tmp_path), "--sizes", "8,1K,64K")
    assert r.returncode == 0, r.stderr
    assert "OSU Micro-Benchmarks 7.4 (imported)" in r.stdout
    changes = [x for x in r.stdout.splitlines() if " since run " in x]
    assert len(changes) == 3 and all("since run latency-2026-11-09.txt (2026-11-09)" in x for x in changes), changes
    shutil.copy(tmp_path / "latency-2026-11-01.txt", tmp_path / "latency-undated.txt")
    r = cli_offline("history", str(tmp_path))
    assert r.returncode == 2 and "no date" in r.stderr


@pytest.mark.parametrize("form", ["latency_20261130.txt", "latency-2026-11-30T02:15:00.txt", "20261130-0215.osu"])
def test_file_dates(tmp_path, form):
    from mpiscope.importers.series import file_date
    p = tmp_path / form
    shutil.copy(REPO / "tests" / "data" / "imports" / "osu-7.4_latency_mpich.txt", p)
    assert file_date(p).startswith("2026-11-30")


def test_imb_date_from_its_header(tmp_path):
    from mpiscope.importers.series import file_date
    assert file_date(REPO / "tests" / "data" / "imports" / "imb-2021_p2p_mpich.txt") == "2026-11-23T07:42:22Z"


def test_plot_history_and_report_section(tmp_path, cli_offline):
    ids = _store(tmp_path / "runs", _medians(10, 5, 2.0), env_from=5)
    r = cli_offline("plot", "--history", str(tmp_path / "runs"), "-o", str(tmp_path / "plots"), "--format", "svg")
    assert r.returncode == 0, r.stderr
    (svg,) = (tmp_path / "plots").glob("history-pingpong-65536B-2r-*.svg")
    assert svg.stat().st_size > 1000
    r = cli_offline("report", *ids, "--runs-dir", str(tmp_path / "runs"), "-o", str(tmp_path / "report.html"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "report.html").read_text()
    assert '<section id="history">' in page and "MPIR_CVAR_CH4_CMA_ENABLE=0 appeared" in page


def test_second_reading_from_the_cache_says_the_same(tmp_path, cli_offline):
    """A run's summary is kept under MPISCOPE_HOME and read back when its files are unchanged; a
    run whose records changed is read again."""
    _store(tmp_path / "runs", _medians(10, 6, 1.5), env_from=6)
    home = tmp_path / "home"
    first = cli_offline("history", str(tmp_path / "runs"), env={"MPISCOPE_HOME": str(home)})
    assert first.returncode == 0 and len(list((home / "cache" / "history").iterdir())) == 10
    again = cli_offline("history", str(tmp_path / "runs"), env={"MPISCOPE_HOME": str(home)})
    assert again.stdout == first.stdout and "since run" in again.stdout
    for kept in (home / "cache" / "history").iterdir():  # a damaged cache is read around
        kept.write_text("{")
    assert cli_offline("history", str(tmp_path / "runs"), env={"MPISCOPE_HOME": str(home)}).stdout == first.stdout
