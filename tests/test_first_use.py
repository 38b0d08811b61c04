"""What a first-time user trips over (issue 31): help texts that speak of material the user does
not have, run ids cut short, and runs that differ without saying how. No MPI is launched here."""
from __future__ import annotations

from pathlib import Path

from mpiscope.plan.engine import Part, Plan
from mpiscope.store.runs import Run, RunMeta


def test_help_texts_say_what_a_study_measures_not_where_it_came_from(cli_offline):
    cli = cli_offline
    for args in (("study", "--help"), ("study", "ring", "--help"), ("study", "grid", "--help"),
                 ("table", "--help"), ("--help",)):
        r = cli(*args)
        assert r.returncode == 0, r.stderr
        text = r.stdout.lower()
        for word in ("chapter", "reference material", "newsletter", "exercise"):
            assert word not in text, f"`mpiscope {' '.join(args)}` speaks of the {word}"


def _run(runs_dir, env: dict[str, str], benchmarks: tuple[str, ...]) -> Run:
    part = Part(Plan(benchmarks, 2, sizes="1:4M"), env=env)
    run = Run.create(runs_dir, RunMeta(id="", parts=[part]))
    run.update(status="ok", pid=None)
    return run


def test_runs_shows_whole_ids_and_what_differs(cli_offline, tmp_path):
    cli = cli_offline
    many = tuple(f"bench{i}" for i in range(30))  # a long row that once squeezed the id column
    plain = _run(tmp_path, {"MPIR_CVAR_ASYNC_PROGRESS": "0"}, many)
    perturbed = _run(tmp_path, {"MPIR_CVAR_ASYNC_PROGRESS": "0", "UCX_TLS": "tcp"}, many)
    r = cli("runs", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert plain.id in r.stdout and perturbed.id in r.stdout  # whole, on one line each
    assert "UCX_TLS=tcp" in next(line for line in r.stdout.splitlines() if perturbed.id in line)
    assert "UCX_TLS unset" in next(line for line in r.stdout.splitlines() if plain.id in line)
    assert "ASYNC_PROGRESS" not in r.stdout  # the same in every run: not a difference
    assert max(map(len, r.stdout.splitlines())) <= 120  # a pipe's width: nothing cut off at the right


def test_pair_benchmarks_on_more_ranks_say_which_ranks_wait(mpich_engine):
    from mpiscope.plan.engine import idle_ranks_note
    note = idle_ranks_note(mpich_engine, Plan(("pingpong", "allreduce"), 3))
    assert note is not None and "ranks 0 and 1" in note and "rank 2 waits" in note and "pingpong" in note
    assert "allreduce" not in note  # a collective uses every rank
    assert "ranks 2-3" in idle_ranks_note(mpich_engine, Plan(("pingpong", "bw"), 4))
    assert idle_ranks_note(mpich_engine, Plan(("pingpong",), 2)) is None
    assert idle_ranks_note(mpich_engine, Plan(("allreduce",), 4)) is None


def test_the_tidy_table_has_a_variant_column_whatever_the_runs_hold(tmp_path):
    import mpiscope as ms
    sample = Path(__file__).resolve().parent / "data" / "imports" / "osu-7.4_latency_mpich.txt"
    run = ms.import_runs([sample], mpi_label="MPICH 5.0.2", runs_dir=tmp_path)
    for df in (run.table(), run.table(per_launch=True)):  # docs/python.md's example, one file
        rows = df[["benchmark", "variant", "size", "time_median_us", "estimate", "tool_benchmark"]]
        assert len(rows) > 10 and rows["variant"].isna().all()


def _ring_frame() -> "pd.DataFrame":
    """A ring study's launch-level rows as the tidy table has them: five algorithms, two loads,
    two levels of a tuning variable, algorithm 1 stopping at 8 KiB, algorithm 5's nblock series."""
    import pandas as pd
    rows = []
    for env in ("0", "1"):
        for load in ("balanced", "imbalanced"):
            for alg in range(1, 6):
                for size in (8, 1024, 8192, 16384):
                    if alg == 1 and size > 8192:
                        continue
                    rows.append({"benchmark": f"ringcs{alg}", "size": size, "series": f"alg{alg} {load} E={env}",
                                 "algorithm": alg, "load": load, "env_E": env, "bw_median_MBps": 100.0 * alg + size,
                                 "time_median_us": 1.0})
        for nblock in (64, 256):
            rows.append({"benchmark": "ringcs5", "size": 16384, "series": f"nblock {nblock} E={env}", "algorithm": 5,
                         "load": "imbalanced", "env_E": env, "nblock": nblock, "bw_median_MBps": 1.0 * nblock,
                         "time_median_us": 1.0})
    return pd.DataFrame(rows)


def test_the_ring_studys_tables_agree_and_label_every_tuning_level():
    from rich.console import Console

    from mpiscope.studies.ring import print_tables
    console = Console(width=200, record=True)
    print_tables(console, _ring_frame(), [])
    text = console.export_text()
    bandwidth = text.split("leading algorithm")[0]
    assert "16 KiB" in bandwidth  # the size the leader table quotes is a column of the bandwidth table
    assert "alg 5 at 16 KiB" in text
    nblock = text.split("MPI_Testall calls")[1].split("deadlocks")[0]
    rows = [line for line in nblock.splitlines() if line.startswith("│")]
    assert len(rows) == 4 and {r.split("│")[1].strip() for r in rows} == {"0", "1"}


def test_unknown_hosts_fail_with_the_launchers_reason_and_the_doctor_command(cli, embedded_mpi, tmp_path):
    r = cli("run", "-b", "pingpong", "--hosts", "nodex.invalid,nodey.invalid", "--sizes", "8", "--launches", "1",
            "--no-progress", "--runs-dir", str(tmp_path), timeout=300)
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("mpiscope: error: the launch failed") and "nodex.invalid" in last
    assert "`mpiscope doctor --hosts nodex.invalid,nodey.invalid`" in last and "below" not in last
    assert "benchmark" not in r.stdout  # no empty table
    (run,) = tmp_path.iterdir()
    assert not (run / "report.html").exists()  # no report of nothing


def test_a_switch_names_the_library_setting_that_stands_at_it():
    from mpiscope.analysis.limits import settings_at
    from mpiscope.report.headline import _switch
    limits = {"MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE": "8192", "MPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD": "8192",
              "MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD": "-1", "MPIR_CVAR_CH4_SHM_POSIX_EAGER": ""}
    assert settings_at((4096, 8192), limits) == ["MPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD=8192",
                                                 "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=8192"]
    assert settings_at((8192, 16384), limits) == []  # the limit is the bracket's lower end: not inside
    (line,) = _switch([(8064.0, (4096, 8192))], limits)
    assert line.endswith("; this build's MPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD=8192, "
                         "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=8192")
    (plain,) = _switch([(200.0, (128, 256))], limits)
    assert "this build" not in plain


def test_the_embedded_mpich_reports_its_protocol_limits(embedded_mpi):
    from mpiscope.execute.probe import protocol_limits
    limits = protocol_limits(embedded_mpi, {}, "ch4:ucx")
    assert limits.get("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE") == "8192"
    assert not any("CH3" in k or "NEMESIS" in k for k in limits)
    with_env = protocol_limits(embedded_mpi, {"MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE": "16384"}, "ch4:ucx")
    assert with_env["MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE"] == "16384"  # the run's environment applies
