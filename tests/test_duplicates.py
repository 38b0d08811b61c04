"""Issue 47: duplicates are not data. A point recorded twice in one launch keeps its first record,
and the repeats are named in one warning; a run copied with `cp -r` is the same run, counted
once wherever it is named beside the original, and never compared with itself."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mpiscope.records import Context, End, read_records
from mpiscope_test_fixtures.synthetic import launch_point, stored_run

SIZES = (8, 1024)


def a_run(where: Path, seed: int, launches: int = 4, slower: float = 1.0) -> Path:
    rng = np.random.default_rng(seed)
    recs = [launch_point(slower * s / 100 * (1 + 0.05 * rng.standard_normal()), k, size=s)
            for k in range(launches) for s in SIZES]
    return stored_run(where, [Context(world_size=2), *recs, End(points=len(recs))]).path


def lines(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]


def write(run: Path, recs: list[dict]) -> None:
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def warnings_of(stderr: str) -> list[str]:
    return [x for x in " ".join(stderr.split()).split("warning: ") if x]


def test_a_second_record_of_a_point_in_its_launch_is_left_out_and_named(cli_offline, tmp_path):
    run = a_run(tmp_path / "runs", 1)
    recs = lines(run)
    first = next(r for r in recs if r.get("type") == "point" and r["size"] == 8 and r["tag"]["launch"] == 2)
    copy = {**first, "time_us": {k: v * 10 if isinstance(v, float) else v for k, v in first["time_us"].items()}}
    write(run, [*recs[:-1], copy, recs[-1]])
    r = cli_offline("export", str(run), "--per-launch", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = [x for x in json.loads(r.stdout) if x["size"] == 8 and x["launch"] == 2]
    assert [x["time_median_us"] for x in rows] == [pytest.approx(first["time_us"]["median"], rel=1e-6)]  # not x10
    (said,) = [w for w in warnings_of(r.stderr) if "repeated" in w]
    assert "1 repeated point record(s) of 1 point(s)" in said and "pingpong 8 B on 2 ranks, launch 2" in said
    assert f"on line {recs.index(first) + 1} again from line {len(recs)}" in said


def test_many_copies_of_one_line_are_one_warning(tmp_path):
    run = a_run(tmp_path / "runs", 2)
    recs = lines(run)
    point = next(r for r in recs if r.get("type") == "point")
    write(run, [*recs[:-1], *[point] * 50_000, recs[-1]])
    got = read_records(run / "records.jsonl")
    assert len(got.points) == len(SIZES) * 4
    (said,) = got.problems
    assert "50,000 repeated point record(s) of 1 point(s)" in said and "(50,000 times)" in said


def test_points_of_other_launches_parts_and_series_are_not_repeats(tmp_path):
    run = a_run(tmp_path / "runs", 3)
    recs = lines(run)
    point = next(r for r in recs if r.get("type") == "point")
    others = [{**point, "tag": {**point["tag"], **extra}}
              for extra in ({"launch": 9}, {"part": 1}, {"series": "ring"}, {"series": ["a", "list"]})]
    write(run, [*recs[:-1], *others, recs[-1]])
    got = read_records(run / "records.jsonl")
    assert not got.problems and len(got.points) == len(SIZES) * 4 + len(others)


@pytest.fixture
def sides(tmp_path) -> tuple[Path, Path, Path]:
    runs = tmp_path / "runs"
    base, cand = a_run(runs, 4, launches=5), a_run(runs, 5, launches=5, slower=1.01)
    copy = Path(shutil.copytree(base, tmp_path / "elsewhere" / "copy"))
    return base, cand, copy


def test_a_copied_run_beside_its_original_is_counted_once(cli_offline, sides):
    base, cand, copy = sides
    alone = cli_offline("compare", str(base), str(cand), "--runs-dir", str(base.parent))
    pooled = cli_offline("compare", f"{base},{copy}", str(cand), "--runs-dir", str(base.parent))
    assert pooled.returncode == alone.returncode and pooled.stdout == alone.stdout, pooled.stderr
    assert "baseline 5 launches" in pooled.stdout
    (said,) = [w for w in warnings_of(pooled.stderr) if "copy" in w]
    assert f"{copy} is a copy of this run" in said and "counted once" in said
    table = cli_offline("export", str(base), str(copy), "--per-launch", "--format", "json")
    assert table.returncode == 0, table.stderr
    assert len(json.loads(table.stdout)) == 5 * len(SIZES)
    assert any(f"{copy} is a copy" in w for w in warnings_of(table.stderr))


def test_a_run_is_never_compared_with_its_copy(cli_offline, sides):
    base, _, copy = sides
    r = cli_offline("compare", str(base), str(copy), "--runs-dir", str(base.parent))
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, said
    assert "is a copy of the baseline's run" in said


def test_a_directory_holding_a_run_and_its_copy_counts_it_once(sides, tmp_path):
    from mpiscope.api import RecordsWarning, load_runs, table
    base, _, copy = sides
    both = tmp_path / "both"
    both.mkdir()
    shutil.copytree(base, both / "a")
    shutil.copytree(copy, both / "b")
    with pytest.warns(RecordsWarning, match="b is a copy of this run"):
        runs = load_runs(both)
    assert [r.path.name for r in runs] == ["a"]
    assert len(table(runs, per_launch=True)) == len(table([both / "a", both / "b"], per_launch=True)) == 5 * len(SIZES)


def test_model_of_a_run_and_its_copy_names_the_copy(cli_offline, sides):
    base, _, copy = sides
    alone = cli_offline("model", str(base), "--json")
    both = cli_offline("model", str(base), str(copy), "--json")
    assert both.returncode == alone.returncode and both.stdout == alone.stdout, both.stderr
    assert any(f"{copy} is a copy of this run" in w for w in warnings_of(both.stderr)), both.stderr
