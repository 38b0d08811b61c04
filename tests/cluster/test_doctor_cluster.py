"""`mpiscope doctor` against faults injected for real: singletons from srun with the wrong PMI
(a private Slurm), shared memory between two namespace hosts (the MPICH wheel's UCX) against
TCP with UCX_TLS=self,tcp, one slow host (a tbf qdisc on its link) found from the pair map,
and one host whose link is down found and named within the time limit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def checks_of(stdout: str) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(stdout)["checks"]}


def doctor_in(cluster, args: list[str], timeout: float = 300):
    """The real CLI inside host 0, reaching the others through the ssh stand-in (MPICH's Hydra)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    hydra = f"-launcher ssh -launcher-exec {cluster.agent} -iface {cluster.iface}"
    return cluster.run([sys.executable, "-m", "mpiscope", "doctor", "--json", "--launcher-args", hydra, *args],
                       env={"PATH": path}, timeout=timeout)


def test_srun_with_the_wrong_pmi_gives_singletons(slurm_cluster, mpiscope_home, tmp_path):
    r = slurm_cluster.run([sys.executable, "-m", "mpiscope", "doctor", "--json", "--launcher", "srun",
                           "--launcher-args=--mpi=none", "-n", "2", "--timeout", "60"], cwd=tmp_path, timeout=300)
    assert r.returncode == 1, r.stderr
    one = checks_of(r.stdout)["one job of N ranks"]
    assert one["status"] == "fail"
    assert "srun --mpi=none" in one["figure"] and "2 job(s) of 1 rank(s)" in one["figure"]
    assert "srun --mpi=none is not the PMI" in one["fix"] and "pmi2" in one["fix"]
    # the right plugin: one job
    r = slurm_cluster.run([sys.executable, "-m", "mpiscope", "doctor", "--json", "--launcher", "srun",
                           "-n", "2", "--timeout", "60"], cwd=tmp_path, timeout=300)
    one = checks_of(r.stdout)["one job of N ranks"]
    assert one["status"] == "ok" and "srun --mpi=pmi2" in one["figure"], r.stdout


def test_ucx_shared_memory_between_hosts_then_tcp(two_hosts, mpiscope_home):
    h0, h1 = two_hosts.hosts
    r = doctor_in(two_hosts, ["--hosts", f"{h0},{h1}", "--timeout", "60"])
    assert r.returncode == 1, r.stderr
    c = checks_of(r.stdout)
    assert c["every host answers"]["status"] == "ok"
    assert c["one job of N ranks"]["status"] == "ok"
    cross = c["transport, different hosts"]
    assert cross["status"] == "fail", cross
    assert "intra-node" in cross["figure"] and "UCX_TLS=self,tcp" in cross["fix"]

    r = doctor_in(two_hosts, ["--hosts", f"{h0},{h1}", "--timeout", "60", "--env", "UCX_TLS=self,tcp",
                              "--env", f"UCX_NET_DEVICES={two_hosts.iface}"])
    c = checks_of(r.stdout)
    cross = c["transport, different hosts"]
    assert cross["status"] in ("ok", "warn") and "UCX tcp between hosts" in cross["figure"], cross
    assert "UCX_TLS=self,tcp" in c["tuning variables in force"]["figure"]
    assert c["same MPI library on every host"]["status"] == "ok"
    assert "on 2 host(s)" in c["same MPI library on every host"]["figure"]


TCP = ["--env", "UCX_TLS=self,tcp", "--env", "UCX_NET_DEVICES=eth0"]


def test_one_slow_host_is_named(netns_hosts, mpiscope_home):
    c3 = netns_hosts(3)
    slow = c3.hosts[2]
    subprocess.run(["tc", "-n", slow, "qdisc", "replace", "dev", c3.iface, "root", "tbf", "rate", "20mbit",
                    "burst", "16kb", "latency", "100ms"], check=True, capture_output=True, timeout=20)
    try:
        r = doctor_in(c3, ["--hosts", ",".join(c3.hosts), "--timeout", "90", *TCP])
    finally:
        subprocess.run(["tc", "-n", slow, "qdisc", "del", "dev", c3.iface, "root"], capture_output=True, timeout=20)
    assert r.returncode == 1, r.stderr
    check = checks_of(r.stdout)["no slow host link"]
    assert check["status"] == "fail", check
    assert f"every pair through {slow}" in check["figure"]
    assert slow in check["fix"]
    for other in c3.hosts[:2]:
        assert other not in check["fix"]


def test_host_with_its_link_down_is_named_within_the_limit(netns_hosts, mpiscope_home):
    c4 = netns_hosts(4)
    dead = c4.hosts[3]
    subprocess.run(["ip", "-n", dead, "link", "set", c4.iface, "down"], check=True, capture_output=True, timeout=20)
    limit = 15
    t0 = time.monotonic()
    r = doctor_in(c4, ["--hosts", ",".join(c4.hosts), "--timeout", str(limit), *TCP])
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    c = checks_of(r.stdout)
    named = [k for k, v in c.items() if v["status"] == "fail" and dead in v["figure"]]
    assert named, c
    assert any(dead in c[k]["fix"] for k in named)
    for k in named:
        for good in c4.hosts[:3]:
            assert good not in c[k]["fix"]
    # every launch is bounded: the reach, the hello and at most a handful of bisection launches
    assert took < 8 * (limit + 10), took


def test_host_with_a_different_eager_limit_is_named(two_hosts, mpiscope_home, tmp_path):
    """One host's own environment (what its shell start-up would set) carries an eager limit the
    other host does not: an ssh stand-in that sets it for that host only, then the usual one."""
    h0, h1 = two_hosts.hosts
    agent = tmp_path / "ssh-standin-eager"
    agent.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = {h1} ] && export MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD=16384; '
                     f'done\nexec {two_hosts.agent} "$@"\n')
    agent.chmod(0o755)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    hydra = f"-launcher ssh -launcher-exec {agent} -iface {two_hosts.iface}"
    r = two_hosts.run([sys.executable, "-m", "mpiscope", "doctor", "--json", "--launcher-args", hydra,
                       "--hosts", f"{h0},{h1}", "--timeout", "60", *TCP], env={"PATH": path}, timeout=300)
    c = checks_of(r.stdout)
    tuning = c["same tuning on every host"]
    assert tuning["status"] == "warn", tuning
    assert f"{h1}: " in tuning["figure"] and "MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD=16384" in tuning["figure"]
    assert tuning["fix"].startswith(f"{h1}: ") and h0 not in tuning["fix"]
    # governor and clock source were judged on both hosts (both namespaces share this machine's sysfs)
    assert "2 host(s)" in c["CPU governor"]["figure"] or f"{h0}:" in c["CPU governor"]["figure"]
    assert h0 in c["clock source"]["figure"] and h1 in c["clock source"]["figure"]
