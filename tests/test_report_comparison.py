"""The report of several runs and of a sweep, on real runs: a "Comparison" section whose verdicts
are `mpiscope compare`'s (every common point listed, in compare's order, counts that agree with
compare's summary; points not in common left out; no common point said in one line), and a
sweep's configurations side by side even when they differ in rank count."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mpiscope.store.runs import Run


VERDICTS = ("slower", "faster", "same", "inconclusive")
DATA = Path(__file__).resolve().parent / "data" / "imports"  # real OSU 7.4 output (tests/test_import.py)
SMALL = ["--max-time", "0.05", "--launches", "2", "--no-progress", "--no-report"]
SPEC = """name = "ranks"
[measure]
benchmarks = ["allreduce"]
sizes = "8,1K"
max_time = 0.05
[factors]
ranks = [1, 2]
"""


class Sections(HTMLParser):
    """Per section id: its text, and its tables (class, rows of cell texts), each after the h3 before it."""

    def __init__(self, text: str):
        super().__init__()
        self.text: dict[str, str] = {}
        self.tables: dict[str, list[tuple[str, str, list[list[str]]]]] = {}
        self._section, self._h3, self._in_h3 = "", "", False
        self._rows: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self._section = a.get("id", "")
        elif tag == "h3":
            self._h3, self._in_h3 = "", True
        elif tag == "table":
            self._rows = []
            self.tables.setdefault(self._section, []).append((a.get("class", ""), self._h3, self._rows))
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "h3":
            self._in_h3 = False
        elif tag in ("td", "th") and self._cell is not None and self._rows:
            self._rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._rows = None

    def handle_data(self, data):
        self.text[self._section] = self.text.get(self._section, "") + data
        if self._in_h3:
            self._h3 += data
        if self._cell is not None:
            self._cell.append(data)


def made(r) -> Run:
    assert r.returncode == 0, r.stdout + r.stderr
    return Run(Path(re.search(r"saved in (\S+)", r.stdout).group(1)))


@pytest.fixture(scope="module")
def runs(cli, tmp_path_factory) -> dict[str, Run]:
    """Two runs of the same points, the second with a tuning variable set that changes nothing
    measurable; one that shares only 1 KiB with them; one of another benchmark."""
    d = tmp_path_factory.mktemp("cmp") / "runs"
    common = ["run", "--runs-dir", str(d), *SMALL]
    return {"a": made(cli(*common, "-b", "pingpong", "--sizes", "8,1K")),
            "b": made(cli(*common, "-b", "pingpong", "--sizes", "8,1K", "--env", "MPIR_CVAR_CH4_CMA_ENABLE=0")),
            "c": made(cli(*common, "-b", "pingpong", "--sizes", "1K,4K")),
            "d": made(cli(*common, "-b", "allreduce", "-n", "2", "--sizes", "8"))}


def counts(summary: str) -> dict[str, int]:
    """`mpiscope compare`'s summary line: '4 points compared: 0 slower, 1 faster, 2 same (...), 1 inconclusive'."""
    return {v: int(re.search(rf"(\d+) {v}", summary).group(1)) for v in VERDICTS}


def test_report_of_two_runs_has_compares_verdicts(cli, runs, tmp_path):
    a, b = runs["a"], runs["b"]
    r = cli("report", str(a.path), str(b.path), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    page = Sections((tmp_path / "r.html").read_text())
    assert 'href="#comparison"' in (tmp_path / "r.html").read_text()
    assert f"Baseline: {a.id}" in page.text["comparison"]
    tables = page.tables["comparison"]
    assert [cls for cls, _, _ in tables] == ["verdicts", "data comparison"]
    (_, heading, verdicts), (_, _, rows) = tables
    assert heading.startswith(b.id)
    assert verdicts[0] == list(VERDICTS)
    # every common point once, sorted by benchmark, variant and size, each with a verdict word
    assert [(row[0], row[1]) for row in rows[1:]] == [("pingpong", "8 B"), ("pingpong", "1 KiB")]
    assert all(row[6].split()[0] in VERDICTS for row in rows[1:])
    assert all(re.fullmatch(r"[\d.e+-]+ \([\d.e+-]+–[\d.e+-]+\)", row[5]) for row in rows[1:])
    shown = dict(zip(VERDICTS, map(int, verdicts[1])))
    assert sum(shown.values()) == 2
    assert shown == {v: sum(row[6].split()[0] == v for row in rows[1:]) for v in VERDICTS}
    cmp = cli("compare", str(a.path), str(b.path))
    assert cmp.returncode == 0, cmp.stderr
    summary = next(line for line in cmp.stdout.splitlines() if "points compared" in line)
    assert shown == counts(summary)
    assert counts(page.text["comparison"]) == shown  # the summary line the report shows is compare's


def test_only_common_points_and_no_common_point_in_one_line(cli, runs, tmp_path):
    a, c, d = runs["a"], runs["c"], runs["d"]
    r = cli("report", str(a.path), str(c.path), str(d.path), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "r.html").read_text()
    page = Sections(html)
    data = [(h, rows) for cls, h, rows in page.tables["comparison"] if cls == "data comparison"]
    assert len(data) == 1 and data[0][0].startswith(c.id)
    assert [(row[0], row[1]) for row in data[0][1][1:]] == [("pingpong", "1 KiB")]
    text = page.text["comparison"]
    assert f"{d.id} against {a.id}" in text
    missing = re.findall(r"Not compared: [^\n]*", text)
    assert len(missing) == 1 and "no point (benchmark, size and rank count) in common" in missing[0]


def test_report_of_one_run_has_no_comparison(cli, runs, tmp_path):
    r = cli("report", str(runs["a"].path), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "r.html").read_text()
    assert 'id="comparison"' not in html and "#comparison" not in html


def test_sweep_report_shows_configurations_side_by_side_across_rank_counts(cli, tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC)
    r = cli("sweep", str(tmp_path / "spec.toml"), "--runs-dir", str(tmp_path / "runs"), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    sd = next((tmp_path / "runs" / "sweeps").glob("ranks-*"))
    page = Sections((sd / "report.html").read_text())
    side = [(h, rows) for cls, h, rows in page.tables["tables"] if "side by side" in h]
    assert len(side) == 1
    heading, rows = side[0]
    assert heading.startswith("allreduce")
    assert rows[0][1:] == ["ranks=1", "ranks=2"]
    assert [row[0] for row in rows[1:]] == ["8", "1024"]
    assert all(re.match(r"[\d.]+", cell) for row in rows[1:] for cell in row[1:])
    # the same table `mpiscope table SWEEP_DIR` prints: its columns and sizes
    t = cli("table", str(sd), "--format", "markdown")
    assert t.returncode == 0, t.stderr
    assert "| size (bytes) | ranks=1 | ranks=2 |" in t.stdout
    # the second configuration against the first: different rank counts share no point
    text = page.text["comparison"]
    assert "Baseline: c001 (ranks=1)" in text and "c002 (ranks=2) against c001 (ranks=1)" in text
    assert "Not compared: no point (benchmark, size and rank count) in common" in text


def test_points_of_an_imported_side_are_said_untested_in_one_line(cli, runs, tmp_path):
    """OSU's osu_latency (means, no interval) against a measured run: compare leaves the common
    points untested; the report names them in one line and lists no verdict row."""
    a = runs["a"]
    imp = made(cli("import", str(DATA / "osu-7.4_latency_mpich.txt"), "--mpi-label", "MPICH 5.0.2",
                   "--runs-dir", str(tmp_path / "runs")))
    r = cli("report", str(a.path), str(imp.path), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    page = Sections((tmp_path / "r.html").read_text())
    assert [cls for cls, _, _ in page.tables["comparison"]] == ["verdicts"]
    text = page.text["comparison"]
    assert text.count("not tested: a side was imported") == 1
    assert "2 points not tested" in text  # 8 B and 1 KiB, the common points


def test_an_inconclusive_row_says_why_the_machine_gave_no_verdict():
    """A verdict voided by a busy side measured apart, or by the sides' controls, says so in its
    row (not only in the terminal's compare)."""
    from mpiscope.report.comparison import _changes
    from mpiscope.results.compare import BUSY_APART, PointChange

    def table(head, rows, cls):
        return "".join("|".join(r) for r in rows)
    busy = PointChange("pingpong", 8, 2, 1.0, 3.0, 2.0, "welch (launches)", 0.01, 1.0, verdict="inconclusive",
                       busy="candidate: steal 30%", state=BUSY_APART)
    moved = PointChange("pingpong", 64, 2, 1.0, 1.2, 0.2, "welch (launches)", 0.01, 1.0, verdict="inconclusive",
                        state="the machine's state differs (control: handoff x3.9)")
    html = _changes([busy, moved], table)
    assert "machine busy: candidate: steal 30%" in html
    assert "the machine&#x27;s state differs (control: handoff x3.9)" in html
