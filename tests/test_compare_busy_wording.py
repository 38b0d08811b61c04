"""compare and the report's comparison word a busy side as the headline does (results.evidence
.clock_bound): a side whose every launch left out was shorter than the ranks' clocks agree (the
clock-sync bound alone, which an idle machine's 0 B barrier or 4 B bcast reach too) is not called
a busy machine; one where another cause joins the clock's still is."""
from __future__ import annotations

from dataclasses import replace

from mpiscope.commands.compare import _verdict
from mpiscope.records import Context, End
from mpiscope.report.comparison import _changes, section, summary
from mpiscope.results.compare import BUSY_APART, CLOCK_APART, compare_runs
from mpiscope.results.launches import PRIOR_DRIFT
from mpiscope_test_fixtures.synthetic import launch_point, stored_run

SPREAD = (1.0, 1.05, 0.97, 1.02, 0.99)  # five launches of one point, a few % apart
MARKS = {"clock": {"clock_sync": {"error_share": 3.0}}, "late": {"invalid": 500}}


def side(by: dict[int, str] | None = None, slower: float = 1.0) -> list:
    """A 4 B and a 64 B pingpong over five launches, `slower` times the baseline's; at 4 B the
    launches in `by` disturbed as named, at 64 B the same launches but the last a rank started
    late instead."""
    by = by or {}
    mixed = {k: ("late" if k == max(by) else c) for k, c in by.items()}
    return [replace(launch_point(m * slower, k, size=size), **MARKS[cause[k]]) if k in cause else
            launch_point(m * slower, k, size=size)
            for size, cause in ((4, by), (64, mixed)) for k, m in enumerate(SPREAD)]


CLOCKED = {1: "clock", 3: "clock", 4: "clock"}
SLOWER = 2.0  # a change a clean side would call slower: measured apart a busy side voids it


def table(head, rows, cls) -> str:
    return "\n".join("|".join(r) for r in rows)


def test_a_side_left_out_for_the_clock_bound_alone_reads_the_clock_wording():
    base, cand = [side()], [side(CLOCKED, SLOWER)]
    changes = compare_runs(base, cand, fallback=PRIOR_DRIFT)
    by_size = {pc.size: pc for pc in changes}
    assert all(pc.busy.startswith("candidate: clock-sync error 3.0 x one event") for pc in changes)
    assert [(pc.size, pc.clocks, pc.state) for pc in changes] == [(4, True, CLOCK_APART), (64, False, BUSY_APART)]
    # the terminal's verdict column
    assert _verdict(by_size[4]) == "inconclusive: shorter than the clocks agree"
    assert _verdict(by_size[64]) == "inconclusive: machine busy"
    # the summary (terminal and report): counted apart, as the headline counts them
    text = summary(changes)
    assert "1 on a busy machine (candidate: clock-sync error 3.0 x one event)" in text
    assert "1 shorter than the ranks' clocks agree (candidate: clock-sync error 3.0 x one event)" in text
    # the report's rows
    rows = dict(zip((4, 64), _changes(changes, table).splitlines()[-2:]))
    assert "(shorter than the clocks agree: candidate: clock-sync error 3.0 x one event)" in rows[4]
    assert "machine busy" not in rows[4]
    assert "(machine busy: candidate: clock-sync error 3.0 x one event)" in rows[64]
    # interleaved, a busy side keeps its verdict: its mark says which
    blocks = {k: k for k in range(5)}
    paired = {pc.size: pc for pc in compare_runs(base, cand, blocks=(blocks, blocks))}
    assert _verdict(paired[4]).endswith(" clocks") and _verdict(paired[64]).endswith(" busy")


def test_no_clock_bound_is_no_change_and_another_cause_is_a_busy_machine():
    base = [side()]
    late = [side({1: "late", 3: "late", 4: "late"}, SLOWER)]
    changes = compare_runs(base, late, fallback=PRIOR_DRIFT)
    assert not any(pc.clocks for pc in changes) and all(_verdict(pc) == "inconclusive: machine busy" for pc in changes)
    assert "2 on a busy machine" in summary(changes) and "clocks agree" not in summary(changes)
    # a side clock-bound alone against a side busy otherwise: a busy machine
    changes = compare_runs(late, [side(CLOCKED)], fallback=PRIOR_DRIFT)
    assert not any(pc.clocks for pc in changes) and all(_verdict(pc) == "inconclusive: machine busy" for pc in changes)
    assert not any(pc.clocks for pc in compare_runs(base, [side()], fallback=PRIOR_DRIFT))


def _stored(runs_dir, records: list):
    return stored_run(runs_dir, [Context(world_size=2), *records, End(points=len(records))])


def test_the_command_and_the_report_say_so(tmp_path, capsys):
    from mpiscope.cli import main
    base, cand = _stored(tmp_path, side()), _stored(tmp_path, side(CLOCKED, SLOWER))
    assert main(["compare", base.id, cand.id, "--runs-dir", str(tmp_path)]) == 0
    raw = capsys.readouterr().out
    out = " ".join(raw.split())  # rich wraps the lines
    verdicts = [" ".join(line.split("│")[-2].split()) for line in raw.splitlines() if line.startswith("│")]
    assert " ".join(verdicts).split(" inconclusive: ") == ["inconclusive: shorter than the clocks agree",
                                                          "machine busy"]  # 4 B, then 64 B
    assert "1 inconclusive because a side measured apart was shorter than the ranks' clocks agree" in out
    assert f"1 inconclusive because {BUSY_APART}" in out
    assert "1 shorter than the ranks' clocks agree (candidate: clock-sync error 3.0 x one event)" in out
    assert "1 on a busy machine (candidate: clock-sync error 3.0 x one event)" in out
    assert f"inconclusive: {CLOCK_APART}" in out and f"inconclusive: {BUSY_APART}" in out
    assert "clocks: most launches of a side were shorter than the ranks' clocks agree" in out
    html = section([base, cand], table)
    assert "(shorter than the clocks agree: candidate: clock-sync error 3.0 x one event)" in html
    assert "1 shorter than the ranks&#x27; clocks agree" in html and "1 on a busy machine" in html
