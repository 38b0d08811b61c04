"""The typed model of records.jsonl: the engine's JSON Lines (schema 1, docs/engine.md) and
the records mpiscope itself writes (time-outs nobody else saw, skips after repeated hangs,
failed launches). One class per record type; every field is checked against its type when a
line is read, so a damaged or foreign line is a RecordError that names the field.

A point's fields that only its benchmark's family writes (a grid's shape, a collective's
datatype, the ring study's schedule) are its `details`, documented per family in
docs/engine.md. What mpiscope adds to a record (the part of the run, a study's series, a
refinement round) is its `tag`, stored under the key "tag"."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from itertools import chain, repeat
from typing import Any, Mapping, Sequence, Union

import orjson

from mpiscope.util.typed import ShapeError, bounded, dump, fields_of, load, shallow

SCHEMA_VERSION = 1
SIZE_MAX_BYTES = 2**31 - 1  # MPI counts are int
MAX_RANKS = 1 << 24
INTRA, INTER, MIXED = "intra-node", "inter-node", "mixed"
# Tags that mpiscope wrote at the top level of a record (with env_* of a study's levels)
# before it kept them under "tag": runs measured then still read the same.
_LEGACY_TAGS = ("part", "series", "algorithm", "load", "nblock", "refinement_round")

RecordError = ShapeError

Tag = Mapping[str, Any]
PointKey = tuple[str, int, int, Union[str, None]]  # benchmark, size, ranks, variant


class AtPoint:
    """A record (or plan entry) that names a point: a benchmark at a size on some ranks, and a
    variant such as a grid shape. Records and plan entries are matched by this key."""
    __slots__ = ()  # records keep their fields in slots: a 200 MB records file is 300,000 of them
    benchmark: str
    size: int
    ranks: int
    variant: str | None

    @property
    def key(self) -> PointKey:
        return (self.benchmark, self.size, self.ranks, self.variant)


@dataclass(frozen=True, slots=True)
class Stats:
    """Statistics of one point's samples, microseconds; None where there was no valid sample."""
    n: int = 0
    median: float | None = None
    min: float | None = None
    mean: float | None = None
    p90: float | None = None
    p99: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    stddev: float | None = None


@dataclass(frozen=True, slots=True)
class Rate:
    """A bandwidth: from the median time and from the fastest sample, MB/s (10^6 bytes/s); `mean`
    only in imported points: the other tool's average rate."""
    median: float | None = None
    max: float | None = None
    mean: float | None = None


@dataclass(frozen=True, slots=True)
class Pair:
    """Two ranks that exchange messages in a point, and whether they share a host."""
    ranks: tuple[int, int]
    same_host: bool = False


@dataclass(frozen=True, slots=True)
class Check:
    """--check: the bytes compared in the verification pass, and how many were wrong."""
    errors: int = 0
    verified_bytes: int = 0


@dataclass(frozen=True, slots=True)
class RankPlace:
    """Where one rank ran (the context record's `ranks`)."""
    rank: int
    host: str = "?"
    cpus: tuple[int, ...] = ()
    bound: bool | None = None
    launch_rank: int | None = None
    pid: int | None = None
    cores_online: int | None = None
    cpu: int | None = None  # the CPU it was on at the start of the launch
    cpu_mhz: float | None = None  # that CPU's clock then; None: unknown
    cpu_mhz_source: str | None = None


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What one host runs on (the context record's `host_facts`): what can change between two
    nights with nothing else changed. None where the host does not tell."""
    host: str = "?"
    kernel: str | None = None
    cpu_model: str | None = None
    governor: str | None = None


# What a point's `estimate` may name: the figure of `time_us` (and of its rates) that is the
# point's estimate. mpiscope measures medians; another tool's output may give only its mean.
ESTIMATES = ("median", "mean")


@dataclass(frozen=True, slots=True)
class Imported:
    """Where a point read from another tool's output came from (`mpiscope import`, docs/import.md):
    the tool (`osu`, `imb`) and its version, the tool's own name of the benchmark, the file and
    line, every figure of that line under the tool's own column heading, and which of the tool's
    columns each field of the record holds (`{"time_us.mean": "Avg Latency(us)"}`; a field
    computed from them says `derived: ...`)."""
    tool: str
    tool_benchmark: str
    file: str
    line: int = 0
    tool_version: str = ""
    figures: Mapping[str, Any] = field(default_factory=dict)
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Context:
    """The first line of every launch: the job, the library, the timer, the options."""
    world_size: int = bounded(1, MAX_RANKS)
    schema_version: int = SCHEMA_VERSION
    engine_version: str = ""
    mpi_library_version: str = ""
    mpi_version: str = ""
    simulation: Mapping[str, Any] | None = None  # SMPI: {"simulator", "platform"}; None: a real run
    start_time: str = ""
    hosts: tuple[str, ...] = ()
    host_facts: tuple[HostFacts, ...] = ()  # one per host, in the order of `hosts`; none simulated
    ranks: tuple[RankPlace, ...] = ()
    order: str = "launch"
    ranks_by_host: tuple[tuple[int, ...], ...] = ()
    cores_online: int | None = None
    oversubscribed: bool = False
    timer: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    argv: tuple[str, ...] = ()
    cpu_mhz: float | None = None
    # MPI's thread level: what MPI_Init_thread requested (None: plain MPI_Init) and what it provided
    thread_level: Mapping[str, Any] | None = None
    tag: Tag = field(default_factory=dict)
    line: int = field(default=0, compare=False)


def _check_estimate(estimate: Any) -> None:
    if estimate not in ESTIMATES:
        raise RecordError(f"point record: 'estimate' must be one of {', '.join(ESTIMATES)}, got {estimate!r}")


@dataclass(frozen=True, slots=True)
class Point(AtPoint):
    """One measured point: a benchmark at a size on some ranks (and a variant, e.g. a grid shape)."""
    benchmark: str
    size: int = bounded(0, SIZE_MAX_BYTES)
    ranks: int = bounded(1, MAX_RANKS)
    time_us: Stats = field(default_factory=Stats)
    family: str = ""
    variant: str | None = None
    order: str = "launch"
    participants: tuple[int, ...] = ()
    pairs: tuple[Pair, ...] = ()
    sample_from: str = ""
    sync: str = ""
    invalid: int = 0
    ops_per_event: float = 1.0
    bytes_per_op: float = 0.0
    bw_MBps: Rate | None = None
    busbw_factor: float | None = None
    busbw_MBps: Rate | None = None
    msg_rate: float | None = None
    window_us: float | None = None
    clock_sync: Mapping[str, Any] | None = None
    sync_reason: str | None = None  # why the row's default sync gave way
    rank_cpus: tuple[int | None, ...] = ()  # the CPU each rank was on at the end of the point
    converged: bool = False
    stop_reason: str = ""
    sample_step_us: float | None = None  # the smallest step between distinct samples
    # every rank's counters over the point (context switches, steal, run queue; docs/engine.md)
    disturbance: Mapping[str, Any] | None = None
    warmup: int = 0
    elapsed_s: float = 0.0
    host_s: float | None = None  # simulated runs: the host's seconds for the point (elapsed_s is simulated)
    # a busy machine slowed the point past the watchdog's limit while it still progressed (not a hang)
    watchdog_limit_s: float | None = None
    watchdog_extensions: int | None = None  # how many times that limit passed (absent: never)
    check: Check | None = None
    samples_us: tuple[float, ...] = field(default=(), repr=False)
    estimate: str = "median"  # which figure of time_us (and of the rates) is the point's estimate
    imported: Imported | None = None  # read from another tool's output, not measured by the engine
    details: Mapping[str, Any] = field(default_factory=dict)  # the family's own fields
    tag: Tag = field(default_factory=dict)
    line: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        _check_estimate(self.estimate)

    @property
    def estimate_us(self) -> float | None:
        """The point's estimate in µs: the median of the samples (mpiscope's), or for an imported
        point the figure of the tool that `estimate` names (OSU's and IMB's averages are means)."""
        return getattr(self.time_us, self.estimate)

    @property
    def stopped_early(self) -> bool:
        """Not converged by a cap, not by design: a start-up point (stop_reason "once") has one
        sample per launch and converges, if at all, over launches; a point at the clock's
        resolution ("timer_resolution") reached the narrowest interval the clock can tell; an
        imported point has no stopping rule."""
        return (not self.converged and self.stop_reason not in ("once", "timer_resolution")
                and self.imported is None)

    # What the analysis reads of any measurement (analysis.measured.Measured): its estimate,
    # which is a median unless `estimate` says otherwise (imported points; tables label it).
    @property
    def median(self) -> float | None:
        return self.estimate_us

    @property
    def ci_low(self) -> float | None:
        return self.time_us.ci_low

    @property
    def ci_high(self) -> float | None:
        return self.time_us.ci_high

    @property
    def n(self) -> int:
        return self.time_us.n

    @property
    def samples(self) -> tuple[float, ...]:
        return self.samples_us

    @property
    def check_errors(self) -> int | None:
        return self.check.errors if self.check else None

    @property
    def placement(self) -> str | None:
        """intra-node when every communicating pair shares a host, inter-node when none does,
        mixed otherwise (a ring over two hosts); None for points without pairs (collectives)."""
        if not self.pairs:
            return None
        same = {p.same_host for p in self.pairs}
        return INTRA if same == {True} else INTER if same == {False} else MIXED


@dataclass(frozen=True, slots=True)
class Skip(AtPoint):
    """A point that was not measured, and why (written by the engine, or by mpiscope after
    repeated hangs: then `source` is "mpiscope")."""
    benchmark: str
    size: int = bounded(0, SIZE_MAX_BYTES)
    ranks: int = bounded(1, MAX_RANKS)
    reason: str = "no reason given"
    variant: str | None = None
    source: str | None = None
    tag: Tag = field(default_factory=dict)
    line: int = field(default=0, compare=False)


# A time-out's source when mpiscope's wall-clock limit stopped a launch whose point the engine's
# watchdog had found still progressing (and extended): slowed by a busy machine, not hung.
STILL_PROGRESSING = "mpiscope wall-clock limit (the point was still progressing)"


@dataclass(frozen=True, slots=True)
class Timeout(AtPoint):
    """A point that did not finish: from the engine's watchdog, or (`source` set) seen by
    mpiscope's own wall-clock limit or recovered after the watchdog's record was lost."""
    benchmark: str
    size: int = bounded(0, SIZE_MAX_BYTES)
    ranks: int = bounded(1, MAX_RANKS)
    limit_s: float | None = None
    variant: str | None = None
    source: str | None = None
    tag: Tag = field(default_factory=dict)
    line: int = field(default=0, compare=False)

    @property
    def hung(self) -> bool:
        """A hang (a deadlock, a lost message), not a point stopped while it still progressed."""
        return self.source != STILL_PROGRESSING


@dataclass(frozen=True, slots=True)
class End:
    """The last line of a launch that finished normally."""
    points: int = 0
    elapsed_s: float = 0.0
    # every rank's counters over the whole launch (context switches, steal, run queue; docs/engine.md)
    disturbance: Mapping[str, Any] | None = None
    tag: Tag = field(default_factory=dict)
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class ControlFigure:
    """One piece of the machine-state control: its repetitions' median, fastest and slowest (µs)
    and each repetition in order; `waited`: repetitions of the handoff left out because its two
    ranks did not run at once."""
    median: float
    min: float | None = None
    max: float | None = None
    samples: tuple[float, ...] = ()
    waited: int | None = None


@dataclass(frozen=True, slots=True)
class Control:
    """The machine-state control the engine measures at the start of a launch, after its context
    (docs/engine.md, "The control record"): a compute loop, a memory copy and a cache line handed
    between two cores, which no option of the run changes, and an 8 B MPI pingpong, which the
    library's configuration does. A piece not measured is None, with its reason in `skipped`
    ("all": none was). Runs measured before the control have none."""
    reps: int = 0
    ranks: tuple[int, ...] = ()
    compute_us: ControlFigure | None = None
    copy_us: ControlFigure | None = None
    handoff_us: ControlFigure | None = None
    mpi_pingpong_us: ControlFigure | None = None
    skipped: Mapping[str, str] = field(default_factory=dict)
    elapsed_s: float = 0.0
    tag: Tag = field(default_factory=dict)
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Failure:
    """Written by mpiscope when a launch failed: what went wrong and, when known, the point
    that was being measured."""
    error: str = "the launch failed"
    exit_code: int | None = None
    benchmark: str | None = None
    size: int | None = bounded(0, SIZE_MAX_BYTES, default=None)
    ranks: int | None = bounded(1, MAX_RANKS, default=None)
    variant: str | None = None
    source: str = "mpiscope"
    tag: Tag = field(default_factory=dict)
    line: int = field(default=0, compare=False)


Record = Union[Context, Point, Skip, Timeout, End, Failure, Control]
RECORD_TYPES: dict[str, type] = {"context": Context, "point": Point, "skip": Skip, "timeout": Timeout,
                                 "end": End, "failure": Failure, "control": Control}
_NAMES = {cls: name for name, cls in RECORD_TYPES.items()}
_POINT_FIELDS = {f.name for f in fields(Point)} - {"details", "tag", "line"}
_KNOWN = frozenset(_POINT_FIELDS | {"type", "tag"})  # every other key is a legacy tag or a detail


def parse_record(d: Any, line: int = 0) -> Record:
    """One decoded JSON line as its record class."""
    if not isinstance(d, dict):
        raise RecordError("not a JSON object")
    kind = d.get("type")
    if kind not in RECORD_TYPES:
        raise RecordError(f"unknown record type {kind!r} (known: {', '.join(RECORD_TYPES)})")
    if kind == "context" and d.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise RecordError(f"context record of schema {d['schema_version']}: this mpiscope reads "
                          f"schema {SCHEMA_VERSION}")
    tag = d.get("tag")
    if tag is not None and not isinstance(tag, dict):
        raise RecordError(f"{kind} record: 'tag' must be an object, got {tag!r}")
    legacy, details = {}, {}
    if not d.keys() <= _KNOWN:  # most lines hold only known fields
        for k in [k for k in d if k not in _KNOWN]:  # in the line's order
            v = d[k]
            if k in _LEGACY_TAGS or k.startswith("env_"):
                legacy[k] = v
            else:
                details[k] = sys.intern(v) if type(v) is str else v  # a datatype's or an operation's name
    # the tag as it is when there is nothing to merge (the loader copies it)
    body = {**d, "tag": {**legacy, **(tag or {})} if legacy or tag is None else tag, "line": line}
    if kind != "point":
        return load(RECORD_TYPES[kind], body, f"{kind} record")
    body["details"] = details
    point = load(Point, body, "point record")
    for name, put in _SHARED_SLOTS:
        v = getattr(point, name)
        if type(v) is dict and (same := _shared(v)) is not v:
            put(point, same)
    return point


_SHARED: dict[bytes, dict] = {}
_SHARED_MAX = 1 << 16
# a point's dicts that repeat from point to point: set on the frozen point as its loader sets them
_SHARED_SLOTS = [(name, Point.__dict__[name].__set__) for name in ("tag", "details", "disturbance")]


def _shared(d: dict) -> dict:
    """An equal dict read before, when there is one: the points of a launch hold one tag, and
    points with the same counters one `disturbance`, not a dict each (records never change their
    dicts). Equal means the same JSON, so 1, 1.0 and true stay apart; NaN (written null) is not
    shared."""
    try:
        key = orjson.dumps(d)
    except TypeError:
        return d
    hit = _SHARED.get(key)
    if hit is not None:
        return hit
    if b"null" not in key:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        _SHARED[key] = d
    return d


def to_json(rec: Record) -> dict[str, Any]:
    """A record as the JSON object it is stored as: parse_record(to_json(r)) == r."""
    return _stored(type(rec), dump(rec))


def point_line(given: Mapping[str, Any]) -> bytes:
    """The line of records.jsonl that holds the point of these fields, made without the Point (an
    import writes a million): to_json's object as orjson writes it, the nested records (Stats,
    Rate, Imported), given as instances or as their fields (`typed.fields_of`), written as their
    fields that are not None (the same bytes as orjson.dumps(to_json(p)))."""
    _check_estimate(given.get("estimate", "median"))
    return orjson.dumps(_stored(Point, fields_of(Point, given)), default=shallow,
                        option=orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_APPEND_NEWLINE)


Slot = tuple[str, ...]  # where a value is in a point's fields: ("time_us", "mean"), ("imported", "line")


class PointLines:
    """`point_line` of many points that share every field but a few values (an imported table's
    rows differ in their size and figures): the line made once with a marker in each slot, then
    each point's values, written by orjson (`json_cells`), put in the markers' places. The bytes
    are point_line's for every point whose fields are `given`'s with its own values at `slots`;
    a value must be one point_line writes in place (a number or a string, not None, which
    point_line leaves out)."""

    def __init__(self, given: Mapping[str, Any], slots: Sequence[Slot]):
        self.slots = tuple(slots)
        marked: dict[str, Any] = dict(given)
        for k, slot in enumerate(slots):
            _put(marked, slot, f"\x00slot {k}\x00")
        line = point_line(marked)
        cuts = []
        for k in range(len(slots)):
            marker = orjson.dumps(f"\x00slot {k}\x00")
            at = line.find(marker)
            if at < 0 or line.find(marker, at + 1) >= 0:  # a value of the point's own that looks like one
                raise ValueError(f"slot {slots[k]} is not once in the point's line")
            cuts.append((at, len(marker), k))
        cuts.sort()
        self.order = [k for _, _, k in cuts]  # the slots in the order the line holds them
        self.pieces, start = [], 0
        for at, length, _ in cuts:
            self.pieces.append(line[start:at])
            start = at + length
        self.pieces.append(line[start:])

    def lines(self, cells: Sequence[Sequence[bytes]]) -> bytes:
        """The lines of the points whose slot k holds cells[k][i] (`json_cells`), joined."""
        parts: list[Any] = [repeat(self.pieces[0])]
        for k, piece in zip(self.order, self.pieces[1:]):
            parts += [cells[k], repeat(piece)]
        return b"".join(chain.from_iterable(zip(*parts)))


def json_cells(values: Sequence[Any]) -> list[bytes]:
    """Each value as orjson writes it inside a point's line (`PointLines.lines`), in one call."""
    if not values:
        return []
    cells = orjson.dumps(values)[1:-1].split(b",")
    if len(cells) != len(values):  # a comma inside a value: it is no cell of its own
        raise ValueError("json_cells takes numbers and strings without commas")
    return cells


def _put(fields_: dict[str, Any], slot: Slot, value: Any) -> None:
    """Set the field at `slot`, copying the mappings on its way (the caller's stay as they are)."""
    head, *rest = slot
    if rest:  # a nested record given as an instance: its fields as point_line writes them
        v = fields_[head]
        fields_[head] = inner = dict(v) if isinstance(v, Mapping) else shallow(v)
        _put(inner, tuple(rest), value)
    else:
        fields_[head] = value


def _stored(kind: type, out: dict[str, Any]) -> dict[str, Any]:
    """A record's fields (None ones left out) as the object it is stored as: its type first, its
    details at the top level, and what an engine's record does not carry left out."""
    out = {"type": _NAMES[kind], **out}
    out.pop("line", None)
    details = out.pop("details", {})
    if kind is Point:  # engine points carry neither: the stored line stays the engine's
        if out.get("imported") is None:
            out.pop("imported", None)
        if out.get("estimate") == "median":
            out.pop("estimate", None)
    if not out.get("tag"):
        out.pop("tag", None)
    return {**out, **details}


def with_tag(record: dict[str, Any], tag: Tag | None) -> dict[str, Any]:
    """A record's JSON object carrying mpiscope's tag."""
    return {**record, "tag": {**record.get("tag", {}), **tag}} if tag else record
