"""`mpiscope doctor` on this machine (real launches of the real engine), and its decisions as
pure functions of facts: the culprit rule, the bisection's launch count, the noise model and
the library's transport report."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpiscope.doctor import FAIL, exit_status
from mpiscope.doctor.facts import Facts, LaunchFacts
from mpiscope.doctor.hosts import culprits, slow_hosts
from mpiscope.doctor.judge import judge
from mpiscope.doctor.noise import expected_max, predicted
from mpiscope.execute.probe import bisect
from mpiscope.doctor import transport

QUICK = ["--timeout", "40"]


def doctor(cli, *args: str):
    r = cli("doctor", "--json", *QUICK, *args, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    report = json.loads(r.stdout)
    return r.returncode, {c["name"]: c for c in report["checks"]}, report


def test_clean_setup_reports_no_fail(cli, tmp_path):
    facts_file = tmp_path / "facts.json"
    rc, checks, report = doctor(cli, "--save-facts", str(facts_file))
    assert rc == 0 and report["status"] == "ok", [c for c in checks.values() if c["status"] == "fail"]
    assert checks["one job of N ranks"]["status"] == "ok"
    assert "one job of 2 ranks" in checks["one job of N ranks"]["figure"]
    assert checks["no two ranks share a core"]["status"] == "ok"
    assert checks["MPI hello on every host"]["status"] == "ok"
    assert checks["transport, same host"]["status"] == "ok"
    assert checks["OS noise (fixed work quantum)"]["status"] in ("ok", "warn")
    assert "at 20 ranks" in checks["OS noise (fixed work quantum)"]["figure"]
    # the embedded MPICH is a CH4 build: only variables its device reads (issue 31), such as the
    # shared-memory cell that sets its eager switch, never the CH3/Nemesis ones MPI_T also lists
    tuning = checks["tuning variables in force"]["figure"]
    assert "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=" in tuning and "device ch4" in tuning
    assert "CH3" not in tuning and "NEMESIS" not in tuning
    for c in checks.values():
        assert c["status"] in ("ok", "warn", "skip")
        assert c["status"] == "ok" or c["status"] == "skip" or c["fix"]
    # the saved facts judge the same way again without launching anything
    again = cli("doctor", "--json", "--facts", str(facts_file))
    assert again.returncode == 0
    assert json.loads(again.stdout)["checks"] == report["checks"]


def test_two_ranks_bound_to_one_core_fail_with_the_fix(cli):
    rc, checks, _ = doctor(cli, "--launcher-args=-bind-to user:0,0")
    assert rc == 1
    shared = checks["no two ranks share a core"]
    assert shared["status"] == "fail"
    assert "ranks 0 and 1" in shared["figure"] and "CPU(s) 0" in shared["figure"]
    assert "--bind-to core" in shared["fix"]


def test_singletons_fail_with_the_fix(cli):
    # Hydra starts both processes, but without its PMI variables each is an MPI job of its own
    rc, checks, _ = doctor(cli, "--launcher-args=env -u PMI_FD -u PMI_RANK -u PMI_SIZE")
    assert rc == 1
    one = checks["one job of N ranks"]
    assert one["status"] == "fail"
    assert "2 job(s) of 1 rank(s)" in one["figure"]
    assert "--mpi" in one["fix"]


@pytest.mark.parametrize("args", [["--timeout", "0"], ["--hosts", "a", "--hostfile", "/nonexistent"],
                                  ["--facts", "/nonexistent/facts.json"], ["-n", "0"],
                                  ["--save-facts", "/nonexistent/dir/facts.json"]])
def test_bad_input_is_one_line_and_exit_2(cli_offline, args):
    r = cli_offline("doctor", *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().startswith("mpiscope: error:") and len(r.stderr.strip().splitlines()) == 1


# -- pure decisions ---------------------------------------------------------------------------

def launch(hosts: list[str], ok: bool) -> LaunchFacts:
    return LaunchFacts(argv=["x"], status="ok" if ok else "timeout", exit_code=0 if ok else None, hosts=hosts)


def test_culprit_rule_names_the_host_left_after_passing_launches():
    tests = [launch(["a", "b", "c", "d"], False), launch(["a"], True), launch(["a", "b"], True),
             launch(["a", "c"], True)]
    assert culprits(tests) == (["d"], [])
    assert culprits([launch(["a", "b", "c"], False)]) == ([], ["a", "b", "c"])


@pytest.mark.parametrize("bad", [{"h5"}, {"h0"}, {"h9"}, {"h3", "h12"}])
def test_bisection_finds_bad_hosts_in_fewer_launches_than_pairs(bad):
    hosts = [f"h{i}" for i in range(16)]
    made = bisect(hosts, lambda group: launch(group, not (bad & set(group))))
    named, _ = culprits([launch(hosts, False), *made])
    assert set(named) == bad
    assert len(made) < len(hosts) * (len(hosts) - 1) // 2 / 4  # 120 pairs; here at most ~12 launches


def test_slow_host_is_the_one_every_slow_pair_goes_through():
    times = {("a", "b"): 50.0, ("a", "c"): 5000.0, ("b", "c"): 5200.0, ("a", "d"): 55.0, ("b", "d"): 52.0,
             ("c", "d"): 4900.0}
    assert [h for h, _ in slow_hosts(times)] == ["c"]
    assert slow_hosts({k: 50.0 for k in times}) == []


def test_noise_model():
    xs = [10.0] * 99 + [110.0]
    assert expected_max(xs, 1) == pytest.approx(sum(xs) / len(xs))
    p = predicted(xs)
    assert p[1] == pytest.approx(0.1) and p[1] < p[10] < p[100] < 10.0
    assert predicted([5.0] * 50) == {1: 0.0, 10: 0.0, 100: 0.0}


# UCX's own lines (UCX 1.20 in the MPICH wheel, UCX_LOG_LEVEL=info), as captured on this machine
UCX_SHM = ["[1795471111.66] [{h}:{pid}:0]      ucp_worker.c:1912 UCX  INFO    ucp_context_0 intra-node cfg#1 "
           "tag(sysv/memory cma/memory)  rma(sysv/memory posix/memory)  am(sysv/memory cma/memory)"]
UCX_TCP = ["[1795471111.66] [{h}:{pid}:0]      ucp_worker.c:1912 UCX  INFO    ucp_context_0 inter-node cfg#1 "
           "tag(tcp/eth0)  rma(tcp/eth0)  am(tcp/eth0)"]


def two_host_facts(lines: list[str]) -> Facts:
    ctx = {"type": "context", "schema_version": 1, "world_size": 2, "hosts": ["a", "b"],
           "ranks": [{"rank": 0, "host": "a", "pid": 11, "cpus": [0, 1], "bound": False, "cores_online": 2},
                     {"rank": 1, "host": "b", "pid": 22, "cpus": [0, 1], "bound": False, "cores_online": 2}],
           "ranks_by_host": [[0], [1]], "cores_online": 2}
    stderr = [ln.format(h=h, pid=pid) for ln in lines for h, pid in (("a", 11), ("b", 22))]
    job = LaunchFacts(argv=["mpiexec"], status="ok", exit_code=0, stdout=[json.dumps(ctx)], stderr=stderr)
    return Facts(mpi_name="embedded", vendor="MPICH", version="5.0.2", ranks=2, hosts=["a", "b"], job=job, pairs=job)


def test_ucx_shared_memory_between_hosts_is_a_fail_naming_ucx_tls():
    checks = {c.name: c for c in transport.checks(two_host_facts(UCX_SHM))}
    cross = checks["transport, different hosts"]
    assert cross.status == FAIL and "UCX_TLS=self,tcp" in cross.fix
    ok = {c.name: c for c in transport.checks(two_host_facts(UCX_TCP))}["transport, different hosts"]
    assert ok.status == "ok" and "tcp" in ok.figure
    assert exit_status(judge(two_host_facts(UCX_SHM))) == 1


def test_the_report_of_a_run_has_the_setup_checks(cli, tmp_path):
    runs = tmp_path / "runs"
    r = cli("run", "--runs-dir", str(runs), "-n", "2", "-b", "pingpong", "--sizes", "8", "--max-time", "0.05",
            "--no-progress", "--launcher-args=-bind-to user:0,0", timeout=300)
    assert r.returncode == 0, r.stderr
    (html,) = runs.glob("*/report.html")
    page = html.read_text()
    assert 'id="setup"' in page and "Setup checks" in page
    assert '<li class="check-fail"><b>fail</b> no two ranks share a core: ranks 0 and 1' in page
    assert "--bind-to core" in page


# -- real facts captured on namespace hosts (tests/cluster/test_doctor_cluster.py makes them live) ----

FACTS = Path(__file__).with_name("doctor_facts")


def judged(name: str) -> tuple[Facts, dict[str, "object"]]:
    f = Facts.load(FACTS / name)
    return f, {c.name: c for c in judge(f)}


def test_captured_ucx_shared_memory_between_hosts():
    f, c = judged("mpich-ucx-shm-between-hosts.json")
    cross = c["transport, different hosts"]
    assert cross.status == FAIL and "intra-node" in cross.figure and "UCX_TLS=self,tcp" in cross.fix
    assert exit_status(list(c.values())) == 1


def test_captured_ucx_tcp_between_hosts():
    f, c = judged("mpich-ucx-tcp.json")
    assert c["transport, different hosts"].status == "ok" and "UCX tcp" in c["transport, different hosts"].figure
    assert not [x for x in c.values() if x.status == FAIL]
    assert "UCX_TLS=self,tcp" in c["tuning variables in force"].figure


def test_captured_openmpi_two_hosts_two_ranks_each():
    f, c = judged("openmpi-2x2.json")
    assert c["transport, same host"].status == "ok" and "sm" in c["transport, same host"].figure
    assert c["transport, different hosts"].status == "ok" and "btl tcp" in c["transport, different hosts"].figure
    assert "btl_sm_eager_limit" in c["tuning variables in force"].figure  # as ompi_info reported it
    assert c["one job of N ranks"].status == "ok" and "4 ranks" in c["one job of N ranks"].figure


def test_captured_slow_host_is_named():
    f, c = judged("mpich-slow-host.json")
    slow = c["no slow host link"]
    assert slow.status == FAIL and f.hosts[2] in slow.fix
    assert f.hosts[0] not in slow.fix and f.hosts[1] not in slow.fix
    assert len(f.pair_tests) == 2


def test_captured_link_down_host_is_named():
    f, c = judged("mpich-link-down.json")
    failed = [x for x in c.values() if x.status == FAIL]
    assert failed and all(f.hosts[3] in x.fix for x in failed)
    assert not any(h in x.fix for x in failed for h in f.hosts[:3])
    assert c["every host answers"].status == FAIL
    # no ok line beside the FAIL claims every host: the job ran on the three that answered
    hello = c["MPI hello on every host"]
    assert hello.status != "ok" and f.hosts[3] in hello.figure and "that answered" in hello.figure
    assert "on the 3 of 4 hosts that answered" in c["one job of N ranks"].figure


def test_noise_beyond_the_measured_ranks_is_labelled_an_extrapolation():
    f, c = judged("openmpi-2x2.json")
    figure = c["OS noise (fixed work quantum)"].figure
    measured, _, extrapolated = figure.partition("extrapolated")
    assert f"measured on {f.ranks} rank(s)" in measured and "assuming" in extrapolated
    assert f"at {10 * f.ranks} ranks" in extrapolated and f"at {f.ranks} ranks" not in figure


def test_captured_mpich_ofi_names_the_libfabric_provider():
    f, c = judged("mpich-ofi-tcp.json")
    cross = c["transport, different hosts"]
    assert cross.status == "ok" and "libfabric provider tcp" in cross.figure
    assert "FI_PROVIDER=tcp" in c["tuning variables in force"].figure
    assert "MPIR_CVAR_DEBUG_SUMMARY" not in c["tuning variables in force"].figure  # doctor's own


def test_tcp_between_hosts_when_ucx_offers_rdma_is_a_fail():
    rdma = UCX_TCP + ["[1795471111.66] [{h}:{pid}:0]      ucp_worker.c:1912 UCX  INFO    ucp_context_0 self cfg#0 "
                      "tag(self/memory rc_mlx5/mlx5_0:1)  am(self/memory)"]
    cross = {c.name: c for c in transport.checks(two_host_facts(rdma))}["transport, different hosts"]
    assert cross.status == FAIL and "UCX_TLS=self,sm,rc_mlx5" in cross.fix


# -- a noisy core, injected for real -----------------------------------------------------------

def spin_on(core: int, count: int) -> list[subprocess.Popen]:
    """`count` busy loops pinned to `core` (the test kills them by PID)."""
    return [subprocess.Popen(["taskset", "-c", str(core), "sh", "-c", "while :; do :; done"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True) for _ in range(count)]


@pytest.mark.skipif(shutil.which("taskset") is None or len(os.sched_getaffinity(0)) < 2,
                    reason="needs taskset and two cores")
def test_a_noisy_core_is_named(cli):
    # Three spinning processes pinned to one core the ranks use: the rank bound there gets at
    # most a quarter of it, so its quanta lose far more time than the other rank's, even on a
    # machine other jobs keep busy (their unpinned load moves to the other core). What is
    # asserted: the core named noisiest is the pinned one, and its share lost is the largest.
    core = max(os.sched_getaffinity(0))
    spinners = spin_on(core, 3)
    try:
        rc, checks, _ = doctor(cli)
    finally:
        for p in spinners:
            p.kill()
        for p in spinners:
            p.wait(timeout=10)
    per_core = checks["OS noise per core"]
    assert per_core["status"] == "warn", per_core
    assert re.match(rf"noisiest \S+:{core} \(", per_core["figure"]), per_core["figure"]
    shares = {int(m.group(1)): float(m.group(2))
              for m in re.finditer(r"\S+:(\d+) \(rank \d+\): \S+ us p50/p99/max, ([\d.]+)% lost", per_core["figure"])}
    assert len(shares) == 2 and shares[core] == max(shares.values()), per_core["figure"]
    assert f":{core}" in per_core["fix"]
    # the job-wide figure is kept, with its prediction at 10x and 100x the ranks
    assert "at 20 ranks" in checks["OS noise (fixed work quantum)"]["figure"]


def sys_lines(host: str, governor: str, clocksource: str, env: dict[str, str]) -> list[str]:
    """What the reach command prints on one host (its SYS lines; the format probe.reach writes)."""
    mark = "MPISCOPE-DOCTOR-SYS " + host
    return ([f"{mark} governor {cpu} {governor}" for cpu in (0, 1)]
            + [f"{mark} clocksource {clocksource}", f"{mark} clocksources tsc hpet acpi_pm"]
            + [f"{mark} env {k}={v}" for k, v in env.items()]
            + [f"{mark} param mca:btl:tcp:param:btl_tcp_eager_limit:value:{env.get('OMPI_MCA_btl_tcp_eager_limit', 65536)}"])


def test_governor_clock_source_and_tuning_are_judged_per_host():
    f = two_host_facts(UCX_TCP)
    f.vendor = "Open MPI"
    f.reach = LaunchFacts(argv=["mpiexec"], status="ok", exit_code=0, hosts=["a", "b"],
                          stdout=sys_lines("a", "performance", "tsc", {"UCX_TLS": "self,tcp"})
                          + sys_lines("b", "powersave", "hpet", {"UCX_TLS": "self,tcp",
                                                                 "OMPI_MCA_btl_tcp_eager_limit": "1024"}))
    c = {x.name: x for x in judge(f)}
    gov = c["CPU governor"]
    assert gov.status == "warn" and "b: CPU(s) 0,1 powersave" in gov.figure and gov.fix.startswith("on b:")
    assert "a:" not in gov.figure
    cs = c["clock source"]
    assert cs.status == "warn" and cs.fix.startswith("on b: echo tsc >") and "on a" not in cs.fix
    same = c["same tuning on every host"]
    assert same.status == "warn" and "btl_tcp_eager_limit=1024 (others: 65536)" in same.figure
    assert same.fix.startswith("b: ")
    # the same settings everywhere: ok, with the eager limit shown
    f.reach.stdout = sys_lines("a", "performance", "tsc", {}) + sys_lines("b", "performance", "tsc", {})
    c = {x.name: x for x in judge(f)}
    assert c["CPU governor"].status == "ok" and c["clock source"].status == "ok"
    assert c["same tuning on every host"].status == "ok" and "btl_tcp_eager_limit=65536" in c["same tuning on every host"].figure
