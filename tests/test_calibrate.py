"""mpiscope calibrate: a twin fitted to a simulated run on a platform whose truth is known (SMPI's
factors at 1) recovers the link's rate and latency, validates itself by simulation, and refuses
bad input in one line with nothing written."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from mpiscope.analysis.calibrate.fit import fit_class
from mpiscope.analysis.calibrate.platform import read_twin
from mpiscope.records.measured import Synthetic

REPO = Path(__file__).resolve().parents[1]
IMPORTS = REPO / "tests" / "data" / "imports"
needs_simgrid = pytest.mark.skipif(not (shutil.which("smpicc") and shutil.which("smpirun")),
                                   reason="SimGrid's smpicc/smpirun are not installed (apt-get install libsimgrid-dev)")
EXACT = "--cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1"
# The truth: two 50 us links (node to switch to node) of 125 MB/s: a route of 100 us, 125 MB/s.
PLATFORM = "cluster:nodes=2,bw=125MBps,lat=50us"
ROUTE_US, RATE_BPS = 100.0, 125e6


def test_two_regimes_become_smpi_factors_above_the_switch():
    # 10 us + n / 1 GB/s up to 64 KiB, then 40 us + n / 2 GB/s (a rendezvous round trip, a faster path)
    sizes = [0, *(2 ** k for k in range(23))]
    t = [10 + n / 1e3 if n <= 65536 else 40 + n / 2e3 for n in sizes]
    pts = [Synthetic(size=n, median=v, ci_low=v * 0.99, ci_high=v * 1.01, n=10) for n, v in zip(sizes, t)]
    c = fit_class("inter-node", pts)
    assert len(c.regimes) == 2 and c.switches == ((65536, 131072),)
    assert c.latency_us.value == pytest.approx(10, rel=0.01)
    assert c.bandwidth_Bps.value == pytest.approx(2e9, rel=0.01)
    first, second = c.regimes
    assert first.above == 0 and 65536 <= second.above < 131072  # SMPI: an entry holds above its size
    assert first.lat_factor.value == pytest.approx(1.0) and first.bw_factor.value == pytest.approx(0.5, rel=0.01)
    assert second.lat_factor.value == pytest.approx(4.0, rel=0.02) and second.bw_factor.value == pytest.approx(1.0)
    assert c.factors("lat").startswith("0:1;") and c.eager_bytes == second.above
    assert c.held_out and not set(c.held_out) & set(c.fitted)  # sizes kept back for the validation
    # every held-out size is inside a regime, never one of its two end sizes on either side
    for r in c.regimes:
        inside = sorted(s for s in sizes if r.sizes[0] <= s <= r.sizes[1])
        assert not set(c.held_out) & {*inside[:2], *inside[-2:]}


def test_a_regime_without_a_plausible_line_still_prices_its_sizes():
    pts = [Synthetic(size=n, median=v) for n, v in [(0, 5.0), (1, 5.0), (2, 5.1), (4, 4.9), (8, 5.0), (16, 5.2)]]
    c = fit_class("intra-node", pts)
    assert np.isfinite(c.latency_us.value) and c.latency_us.value > 0


def _import(cli_offline, runs: Path, name: str, *args: str) -> str:
    r = cli_offline("import", str(IMPORTS / name), *args, "--runs-dir", str(runs))
    assert r.returncode == 0, r.stderr
    return re.search(r"saved in (\S+)", r.stdout + r.stderr).group(1)


def test_no_pingpong_and_mixed_libraries_are_one_line_and_write_nothing(cli_offline, tmp_path):
    runs = tmp_path / "runs"
    coll = _import(cli_offline, runs, "osu-7.4_allreduce_mpich.txt", "--ranks", "4", "--mpi-label", "MPICH 4.2")
    mpich = _import(cli_offline, runs, "osu-7.4_latency_mpich.txt", "--mpi-label", "MPICH 4.2")
    ompi = _import(cli_offline, runs, "osu-7.4_latency_mpich.txt", "--mpi-label", "Open MPI 5.0.3")
    out = tmp_path / "twin.xml"
    for refs, said in (([coll], "no pingpong to calibrate from"),
                       ([mpich, ompi], "different libraries (MPICH: ")):
        r = cli_offline("calibrate", *refs, "-o", str(out), "--runs-dir", str(runs))
        assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not out.exists() and not out.with_suffix(".hosts").exists()
    r = cli_offline("calibrate", mpich, "--nodes", "1", "-o", str(out), "--runs-dir", str(runs))
    assert r.returncode == 2 and "--nodes 1" in r.stderr and not out.exists()
    r = cli_offline("calibrate", "--validate", str(tmp_path / "none.xml"), mpich, "--runs-dir", str(runs))
    assert r.returncode == 2 and "--validate" in r.stderr


@pytest.fixture(scope="module")
def simulated(cli, mpiscope_home, tmp_path_factory):
    """A simulated pingpong on the known platform, in a home of its own (SMPI added there, the
    session's engine builds shared: test_smpi.py's SMPI engine is this one)."""
    if not (shutil.which("smpicc") and shutil.which("smpirun")):
        pytest.skip("SimGrid's smpicc/smpirun are not installed (apt-get install libsimgrid-dev)")
    home, runs = tmp_path_factory.mktemp("calibrate-home"), tmp_path_factory.mktemp("calibrate-runs")
    (mpiscope_home / "builds").mkdir(exist_ok=True)
    (home / "builds").symlink_to(mpiscope_home / "builds")
    env = {"MPISCOPE_HOME": str(home)}
    r = cli("mpi", "add", "smpi", env=env)
    assert r.returncode == 0, r.stderr
    r = cli("run", "--mpi", "smpi", "-n", "2", "-b", "pingpong", "--sizes", "0,1K,4K,16K,64K,256K,1M",
            "--platform", PLATFORM, "--launches", "1", "--launcher-args", EXACT, "--runs-dir", str(runs), env=env)
    assert r.returncode == 0, r.stderr
    (run,) = runs.iterdir()
    return env, runs, run.name


@pytest.fixture(scope="module")
def calibrated(cli, simulated, tmp_path_factory):
    """`mpiscope calibrate` of the simulated pingpong: its result and the platform it wrote."""
    env, runs, run = simulated
    out = tmp_path_factory.mktemp("twin") / "twin.xml"
    r = cli("calibrate", run, "-o", str(out), "--runs-dir", str(runs), env=env)
    assert r.returncode == 0, r.stderr
    return r, out


@needs_simgrid
def test_calibrate_recovers_the_links_rate_and_latency_and_validates(cli, simulated, calibrated):
    env, runs, run = simulated
    r, out = calibrated
    record = read_twin(out)
    keys = dict(kv.split("=") for kv in record["description"].split(":", 1)[1].split(","))
    assert float(keys["bw"].removesuffix("Bps")) == pytest.approx(RATE_BPS, rel=0.05)
    assert 2 * float(keys["lat"].removesuffix("us")) == pytest.approx(ROUTE_US, rel=0.05)
    assert record["runs"] == [run] and record["held_out"]["inter-node"]
    text = out.read_text()
    assert '<prop id="smpi/lat-factor"' in text and "route latency" in text and "mpiscope 0." in text
    assert out.with_suffix(".hosts").read_text().split() == ["node-0", "node-1"]
    # the validation, always shown: every point measured, simulated on the twin, all within target
    table = r.stdout[r.stdout.index("validation:"):]
    assert len(re.findall(r"^pingpong\s+2\s", table, re.M)) == 7 and "held out" in table
    assert re.search(r"^all: 7 points, median \|error\| \d+\.\d%.*, 0 outside target$", r.stdout, re.M), r.stdout
    # a later validation of the written twin against the same run
    r = cli("calibrate", "--validate", str(out), run, "--runs-dir", str(runs), env=env)
    assert r.returncode == 0 and "0 outside target" in r.stdout, r.stdout + r.stderr


@needs_simgrid
def test_the_validation_table_is_in_the_html_report_of_the_twin_and_of_runs_on_it(cli, simulated, calibrated,
                                                                                 tmp_path):
    env, runs, run = simulated
    _, out = calibrated
    assert len(read_twin(out)["validation"]) == 7  # the record keeps the table, point by point

    def section(page: Path) -> str:
        text = page.read_text()
        return text[text.index('<section id="calibration">'):].split("</section>")[0]

    # calibrate's own page: the source run with the twin's validation, summary and table
    page = section(out.with_suffix(".html"))
    assert str(out) in page and f"from runs {run}" in page and "all: 7 points" in page
    assert page.count("<tr>") == 8 and "held out" in page and "pingpong" in page
    # a run simulated on the twin: its report shows how far the twin was validated
    later = tmp_path / "runs"
    r = cli("run", "--mpi", "smpi", "--platform", str(out), "--hostfile", str(out.with_suffix(".hosts")), "-n", "2",
            "-b", "pingpong", "--sizes", "1K", "--runs-dir", str(later), env=env)
    assert r.returncode == 0, r.stderr
    (twin_run,) = later.iterdir()
    assert "all: 7 points" in section(twin_run / "report.html")
    # the later validation writes its page when asked; a real run's report has no such section
    html = tmp_path / "later.html"
    r = cli("calibrate", "--validate", str(out), twin_run.name, "--report", str(html), "--runs-dir", str(later),
            env=env)
    assert r.returncode == 0, r.stderr
    assert "all: 1 points" in section(html) and f"from runs {run}" in section(html)
    plain = tmp_path / "plain.html"
    assert cli("report", run, "-o", str(plain), "--runs-dir", str(runs), env=env).returncode == 0
    assert 'id="calibration"' not in plain.read_text()


@needs_simgrid
def test_the_validation_leaves_out_the_alltoall_simgrid_aborts_on_and_says_so(cli, simulated, tmp_path):
    env, runs, run = simulated
    three = tmp_path / "runs"
    r = cli("run", "--mpi", "smpi", "-n", "3", "-b", "alltoall,allreduce", "--sizes", "8,64K", "--launches", "1",
            "--platform", "cluster:nodes=3,bw=125MBps,lat=50us", "--launcher-args", f"{EXACT} --cfg=smpi/alltoall:ring",
            "--runs-dir", str(three), env=env)
    assert r.returncode == 0, r.stderr
    (coll,) = three.iterdir()
    r = cli("calibrate", run, str(coll), "-o", str(tmp_path / "twin.xml"), "--runs-dir", str(runs), env=env)
    assert r.returncode == 0, r.stderr
    assert "alltoall at 3 ranks from 32 KiB blocks is not simulated" in r.stderr
    validated = set(re.findall(r"^(alltoall|allreduce)\s+3\s+(\S+ \S+)", r.stdout, re.M))
    assert validated == {("alltoall", "8 B"), ("allreduce", "8 B"), ("allreduce", "64 KiB")}, r.stdout


@needs_simgrid
def test_a_platform_simgrid_rejects_is_one_line(cli, simulated, tmp_path):
    env, runs, run = simulated
    good = tmp_path / "twin.xml"
    assert cli("calibrate", run, "-o", str(good), "--runs-dir", str(runs), env=env).returncode == 0
    bad = tmp_path / "bad.xml"
    bad.write_text(good.read_text().replace('routing="Cluster"', 'routing="Nowhere"'))
    r = cli("calibrate", "--validate", str(bad), run, "--runs-dir", str(runs), env=env)
    assert r.returncode == 2 and "SimGrid" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@needs_simgrid
def test_the_groups_of_a_pair_map_shape_the_twin(cli, simulated, tmp_path):
    env, runs, run = simulated
    before = set(runs.iterdir())
    r = cli("run", "--mpi", "smpi", "-n", "8", "-b", "pairs", "--sizes", "8", "--platform",
            "fattree:nodes=8,per-switch=4", "--launches", "1", "--launcher-args", EXACT, "--runs-dir", str(runs),
            env=env)
    assert r.returncode == 0, r.stderr
    (pairs,) = set(runs.iterdir()) - before
    out = tmp_path / "tree.xml"
    r = cli("calibrate", run, pairs.name, "-o", str(out), "--runs-dir", str(runs), env=env)
    assert r.returncode == 0, r.stderr
    shape = read_twin(out)["description"]
    assert shape.startswith("fattree:per-switch=4,") and "nodes=8" in shape, shape


def test_the_platform_carries_its_configuration_and_provenance(tmp_path):
    from mpiscope.analysis.calibrate.platform import Twin
    from mpiscope.report.twin import twin_xml
    pts = [Synthetic(size=n, median=2 + n / 1e4, ci_low=(2 + n / 1e4) * 0.99, ci_high=(2 + n / 1e4) * 1.01, n=5)
           for n in (0, 1, 1024, 65536, 1 << 20)]
    twin = Twin(fit_class("inter-node", pts), None, "dragonfly:routers=4,per-router=2", 16, "ompi", "Open MPI",
                ("run--a",), "9.9")
    xml = tmp_path / "twin.xml"
    xml.write_text(twin_xml(twin, validation="all: 3 points"))
    text = xml.read_text()
    body = text[text.index("<platform"):]
    assert "--" not in "".join(re.findall(r"<!--(.*?)-->", body, re.S))  # XML forbids it in a comment
    assert '<prop id="smpi/coll-selector" value="ompi"/>' in text and "groups=2" in twin.description
    rec = read_twin(xml)
    assert rec["runs"] == ["run--a"] and rec["version"] == "9.9" and "smpi/coll-selector:ompi" in rec["cfg"]
    assert len(twin.hosts()) == 16 and read_twin(tmp_path / "twin.xml") is not None
