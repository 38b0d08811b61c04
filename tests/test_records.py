"""The one record model (mpiscope.records): every record type survives a round trip, damaged
lines are named by number, and every field the real engine writes is a field of the model or a
family's own field documented in docs/engine.md."""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import fields, replace
from pathlib import Path

import orjson
import pytest

from mpiscope.records.model import Control
from mpiscope.records import (Check, Context, End, Failure, Imported, Pair, Point, PointLines, RankPlace, Rate,
                              RecordError, Skip, Stats, Timeout, json_cells, parse_record, point_line, read_records,
                              to_json)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "engine.md"

EXAMPLES = [
    Context(world_size=2, engine_version="0.1.0", mpi_library_version="MPICH Version: 5.0.2", mpi_version="4.1",
            start_time="2026-11-23T08:00:00Z", hosts=("a",), ranks=(RankPlace(0, "a", (0,), True, 0, 11, 2),
                                                                 RankPlace(1, "a", (1,), True, 1, 12, 2)),
            ranks_by_host=((0, 1),), cores_online=2, options={"sizes": "8", "max_time_s": 1.0},
            env={"MPIR_CVAR_X": "1"}, argv=("mpiscope-engine", "pingpong"), tag={"part": 0}),
    Point("pingpong", 8, 2, Stats(10, 1.0, 0.9, 1.01, 1.1, 1.2, 0.95, 1.05, 0.02), family="p2p",
          participants=(0, 1), pairs=(Pair((0, 1), True),), sample_from="rank0", sync="none", ops_per_event=2.0,
          bytes_per_op=8.0, bw_MBps=Rate(8.0, 8.9), msg_rate=None, converged=True, stop_reason="ci", warmup=8,
          elapsed_s=0.01, check=Check(0, 24), samples_us=(1.0, 0.9),
          tag={"part": 0, "series": "alg1 balanced"}),
    Point("grid", 1024, 4, Stats(5, 2.0), family="grid", variant="2x2",
          details={"grid": {"shape": "2x2", "p": 2, "q": 2}, "phases_us": {"step": 2.0}}),
    Skip("allreduce", 2, 2, "2 bytes is not a whole number of 4-byte float elements (--datatype)"),
    Skip("ringcs1", 8192, 2, "not measured: hung at 2048 B and below", source="mpiscope", tag={"part": 1}),
    Timeout("ringcs1", 1024, 2, 1.5),
    Timeout("grid", 1024, 4, None, "1x4", "mpiscope wall-clock limit"),
    End(12, 3.5),
    Failure("the engine stopped early (exit 9)", 9, "bw", 1024, 2, None, tag={"part": 0}),
]


@pytest.mark.parametrize("record", EXAMPLES, ids=lambda r: type(r).__name__)
def test_every_record_type_round_trips(record):
    text = json.dumps(to_json(record))
    assert parse_record(json.loads(text), record.line) == record


@pytest.mark.parametrize("line, fragment", [
    ({"type": "point", "benchmark": 5, "size": 8, "ranks": 2, "time_us": {"n": 1}}, "'benchmark' must be a string"),
    ({"type": "point", "benchmark": "bw", "size": "x", "ranks": 2, "time_us": {"n": 1}}, "'size' must be a whole"),
    ({"type": "point"}, "without 'benchmark'"),
    ({"type": "point", "benchmark": "bw", "size": -5, "ranks": 2, "time_us": {"n": 1}}, "out of range"),
    ({"type": "point", "benchmark": "bw", "size": 8, "ranks": "two", "time_us": {"n": 1}}, "'ranks' must be"),
    ({"type": "point", "benchmark": "bw", "size": 1e400, "ranks": 2, "time_us": {"n": 1}}, "'size' must be"),
    ({"type": "point", "benchmark": "bw", "size": 8, "ranks": 2, "participants": ["a"]}, "'participants'[0] must be"),
    ({"type": "point", "benchmark": "bw", "size": 8, "ranks": 2, "pairs": [{"ranks": [None, 1]}]}, "'ranks'[0] must"),
    ({"type": "context", "world_size": 2, "ranks_by_host": [5]}, "'ranks_by_host'[0] must be a list"),
    ({"type": "skip", "benchmark": "bw", "size": 8, "ranks": 2, "tag": [1]}, "'tag' must be an object"),
    ({"type": "timeout", "benchmark": None, "size": None}, "without 'benchmark'"),
    ({"type": "context", "schema_version": 2, "world_size": 2}, "schema 2"),
    ({"type": "nonsense"}, "unknown record type"),
    ([1, 2], "not a JSON object"),
])
def test_wrong_fields_are_a_record_error_that_says_which(line, fragment):
    with pytest.raises(RecordError, match=re.escape(fragment)):
        parse_record(line)


def test_the_reader_names_bad_lines_by_number(tmp_path):
    f = tmp_path / "records.jsonl"
    good = json.dumps(to_json(EXAMPLES[1]))
    later = json.dumps({**to_json(EXAMPLES[1]), "tag": {"launch": 1}})  # a point is recorded once a launch
    f.write_text(f'{good}\nnot json\n{{"type": "point", "size": "x"}}\n{later}\n{{"type": "po')
    recs = read_records(f)
    assert [type(r).__name__ for r in recs.records] == ["Point", "Point"]
    assert [p.split(" is ")[0] for p in recs.problems] == ["records.jsonl line 2", "records.jsonl line 3",
                                                           "records.jsonl line 5"]
    assert recs.points[1].line == 4


def test_lines_the_fast_decoder_refuses_read_as_the_standard_parser_reads_them(tmp_path):
    """NaN, an integer beyond 64 bits and a lone surrogate are JSON as Python writes and reads it:
    the records reader decodes them as before (orjson refuses them); a line neither reads is a
    problem with its number, in the standard parser's words."""
    f = tmp_path / "records.jsonl"
    good = to_json(EXAMPLES[1])
    f.write_text(json.dumps({**good, "nan_figure": float("nan")}) + "\n"
                 + json.dumps({**good, "count": 2 ** 70, "label": "\ud800", "tag": {"launch": 1}}) + "\n" + "{nonsense\n")
    recs = read_records(f)
    assert [p.details.get("count") for p in recs.points] == [None, 2 ** 70]
    assert recs.points[0].details["nan_figure"] != recs.points[0].details["nan_figure"]  # NaN
    assert recs.points[1].details["label"] == "\ud800"
    assert recs.problems == ["records.jsonl line 3 is corrupt and was skipped (not JSON (Expecting property name "
                             "enclosed in double quotes: line 1 column 2 (char 1)))"]


def test_tags_of_runs_written_before_tags_had_their_key_still_read_as_tags():
    old = {"type": "point", "benchmark": "ringcs1", "size": 8, "ranks": 2, "time_us": {"n": 1, "median": 2.0},
           "ringcs": {"algorithm": 1}, "series": "alg1 balanced", "algorithm": 1, "part": 3, "env_X": "1"}
    p = parse_record(old)
    assert p.tag == {"series": "alg1 balanced", "algorithm": 1, "part": 3, "env_X": "1"}
    assert p.details == {"ringcs": {"algorithm": 1}}


def _json_names(cls) -> set[str]:
    return {f.name for f in fields(cls) if f.name not in ("line", "tag", "details")}


@pytest.fixture(scope="module")
def engine_output(mpich_engine, mpich_mpiexec) -> list[dict]:
    """Every benchmark of the registry, once, on two real ranks, with --check and --raw."""
    names = [b["name"] for b in json.loads(subprocess.run([str(mpich_engine), "--list", "--json"],
                                                          capture_output=True, text=True).stdout)]
    done = subprocess.run([str(mpich_mpiexec), "-n", "2", str(mpich_engine), "--sizes", "0,8", "--max-time", "0.01",
                           "--min-reps", "4", "--warmup", "1", "--warmup-bytes", "1K", "--timeout", "60", "--check",
                           "--raw", *names], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MPIR_CVAR_NOTHING": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_every_field_the_engine_writes_is_known_to_the_model(engine_output):
    """A field of the record's class, or (points) a family's own detail; never taken for a tag."""
    classes = {"context": Context, "point": Point, "skip": Skip, "timeout": Timeout, "end": End, "control": Control}
    kinds = set()
    for rec in engine_output:
        kinds.add(rec["type"])
        model = parse_record(rec)
        assert not model.tag, f"{rec['type']} {rec.get('benchmark')}: fields taken for mpiscope's tag: {model.tag}"
        unknown = set(rec) - _json_names(classes[rec["type"]]) - {"type"}
        assert unknown == set(getattr(model, "details", {})), unknown
        assert to_json(model) == rec  # nothing lost, nothing added
    assert {"context", "control", "point", "end"} <= kinds


def test_the_schema_section_documents_every_field(engine_output):
    """Every field the engine writes, the families' own included, and every field mpiscope's
    own records hold, is named in docs/engine.md's schema section."""
    schema = DOCS.read_text().split("## Output: JSON Lines", 1)[1]
    written = {key for rec in engine_output for key in rec}
    written |= {f.name for cls in (Skip, Timeout, Failure) for f in fields(cls)} - {"line"}
    missing = sorted(k for k in written if f'"{k}"' not in schema and f"`{k}`" not in schema)
    assert not missing, f"docs/engine.md does not document: {missing}"


IMPORTED = Point("pingpong", 8, 2, Stats(n=0, mean=1.5), family="p2p", participants=(0, 1), sample_from="imported",
                 bytes_per_op=8.0, bw_MBps=Rate(mean=5.3), stop_reason="imported", estimate="mean",
                 imported=Imported("osu", "osu_latency", "/x/osu.txt", 12, "7.4", {"Avg Latency(us)": 1.5},
                                   {"time_us.mean": "Avg Latency(us)"}),
                 details={"datatype": "MPI_CHAR", "overlap": {"pure_us": 1.0}}, tag={"file": "osu.txt"})


@pytest.mark.parametrize("record", [r for r in EXAMPLES if isinstance(r, Point)] + [IMPORTED],
                         ids=["engine", "grid", "imported"])
def test_a_point_line_is_the_line_of_its_point(record):
    """An import writes each row's point from its fields, without making the Point: the same line,
    whether every field is given or only those that differ from their defaults."""
    every = {f.name: getattr(record, f.name) for f in fields(Point) if f.name != "line"}
    bare = Point(record.benchmark, record.size, record.ranks)
    given = {name: v for name, v in every.items() if name in ("benchmark", "size", "ranks") or v != getattr(bare, name)}
    assert len(given) < len(every)
    stored = orjson.dumps(to_json(record)) + b"\n"
    assert point_line(every) == stored
    assert point_line(given) == stored
    assert parse_record(orjson.loads(point_line(every))) == record
    with pytest.raises(RecordError, match="'estimate' must be one of"):
        point_line({**every, "estimate": "mode"})


# where the points of one template differ, for each kind of point above; the values they take
VARYING = {"engine": [("size",), ("time_us", "median"), ("time_us", "n"), ("bw_MBps", "max"), ("elapsed_s",)],
           "grid": [("size",), ("time_us", "n"), ("time_us", "median"), ("details", "phases_us", "step")],
           "imported": [("imported", "line"), ("size",), ("bytes_per_op",), ("time_us", "mean"), ("bw_MBps", "mean"),
                        ("imported", "figures", "Avg Latency(us)"), ("details", "overlap", "pure_us")]}
AWKWARD = [0.1 + 0.2, 1e-7, 1e22, 5e-324, 123456789.0, 2.0, 1 / 3]


def _with(given, slot, value):
    """`given` (fields, or a record) with `value` at `slot`, the rest as it was."""
    head, *rest = slot
    inner = given[head] if isinstance(given, dict) else getattr(given, head)
    new = _with(inner, rest, value) if rest else value
    return {**given, head: new} if isinstance(given, dict) else replace(given, **{head: new})


@pytest.mark.parametrize("record", [r for r in EXAMPLES if isinstance(r, Point)] + [IMPORTED],
                         ids=["engine", "grid", "imported"])
def test_a_template_writes_each_point_s_own_line(record, request):
    """The lines of many points that differ in a few values, made from one template, are the bytes
    point_line writes for each: whole numbers and awkward floats, nested records and details."""
    every = {f.name: getattr(record, f.name) for f in fields(Point) if f.name != "line"}
    slots = VARYING[request.node.callspec.id]
    rows = [[i * 7 + k if slot[-1] in ("size", "line", "n") else AWKWARD[(i + k) % len(AWKWARD)]
             for k, slot in enumerate(slots)] for i in range(5)]
    expected = []
    for values in rows:
        given = every
        for slot, v in zip(slots, values):
            given = _with(given, slot, v)
        expected.append(point_line(given))
    template = PointLines(every, slots)
    assert template.lines([json_cells([values[k] for values in rows]) for k in range(len(slots))]) == b"".join(expected)
    with pytest.raises(ValueError, match="is not once"):  # a field the stored line leaves out has no place
        PointLines(every, [*slots, ("line",)])


def test_the_loader_takes_each_value_as_its_converter_does():
    """The loader's inline paths (a whole number in a float field, a plain object copied, a nested
    record's own loader, a record made by setting its slots) give what the converters and
    __init__ give, types included, and refuse what they refuse with the same messages."""
    line = {"type": "point", "benchmark": "bw", "size": 8, "ranks": 2, "ops_per_event": 2, "bytes_per_op": 8,
            "busbw_factor": 1, "time_us": {"n": 3, "median": 1, "min": 0.5}, "bw_MBps": {"median": 8, "max": 9.5},
            "clock_sync": {"error_us": 0.5}, "pairs": [], "participants": [0, 1]}
    p = parse_record(line, 7)
    assert p == Point("bw", 8, 2, Stats(3, 1.0, 0.5), ops_per_event=2.0, bytes_per_op=8.0, busbw_factor=1.0,
                      bw_MBps=Rate(8.0, 9.5), clock_sync={"error_us": 0.5}, participants=(0, 1)) and p.line == 7
    for got in (p.ops_per_event, p.bytes_per_op, p.busbw_factor, p.time_us.median, p.bw_MBps.median):
        assert type(got) is float
    assert p.clock_sync == line["clock_sync"] and p.clock_sync is not line["clock_sync"]
    for bad, fragment in [({"ops_per_event": True}, "'ops_per_event' must be a finite number"),
                          ({"busbw_factor": float("inf")}, "'busbw_factor' must be a finite number"),
                          ({"clock_sync": [1]}, "'clock_sync' must be an object"),
                          ({"time_us": {"n": 1, "median": "x"}}, "'time_us': 'median' must be a finite number"),
                          ({"estimate": "mode"}, "'estimate' must be one of")]:
        with pytest.raises(RecordError, match=re.escape(fragment)):
            parse_record({**line, **bad})


def test_points_share_equal_dicts_and_keep_their_json_types():
    """The points of a launch hold one tag and equal counters one dict (a 200 MB file is 300,000
    points), yet 1, 1.0 and true, and NaN and null, stay what each line says."""
    from mpiscope.records import parse_line
    line = ('{"type": "point", "benchmark": "pingpong", "size": %d, "ranks": 2, "tag": {"launch": %s}, '
            '"disturbance": {"nivcsw": [0, %s]}}')
    a, b = (parse_line(line % (size, "1", "3")) for size in (8, 16))
    assert a.tag is b.tag and a.disturbance is b.disturbance and a.details is b.details
    for value in ("true", "1.0"):
        other = parse_line(line % (8, value, "3.0"))
        assert type(other.tag["launch"]) is not int and type(other.disturbance["nivcsw"][1]) is float
    nan = parse_line(line % (8, "NaN", "3"))
    null = parse_line(line % (8, "null", "3"))
    assert nan.tag["launch"] != nan.tag["launch"] and null.tag["launch"] is None
