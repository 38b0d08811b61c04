"""The typed model of records.jsonl: the engine's JSON Lines (schema 1, docs/engine.md) and
the records mpiscope itself adds (time-outs nobody else saw, skips after repeated hangs,
failed launches). One class per record type; `from_json` checks every field it reads, so a
damaged or foreign line becomes a `RecordError`, never a wrong number."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping, Union

SCHEMA_VERSION = 1
SIZE_MAX_BYTES = 2**31 - 1  # MPI counts are int

# Point fields that belong to one benchmark or family (written by its row's `describe`):
# the model keeps them in Point.details, the tidy table flattens them. Each is documented
# in docs/engine.md; tests/test_records.py checks that the engine writes no other field.
DETAIL_FIELDS: dict[str, str] = {
    "datatype": "collectives: element type",
    "count": "collectives: elements per rank's block",
    "op": "reductions: the operation",
    "in_place": "collectives: MPI_IN_PLACE used",
    "rotate_root": "collectives: root = iteration mod ranks",
    "t_min_us": "collectives: IMB t_min, over ranks of each rank's mean",
    "t_max_us": "collectives: IMB t_max",
    "t_avg_us": "collectives: IMB t_avg",
    "osu_avg_us": "collectives: OSU's average latency",
    "overlap": "nonblocking collectives: pure, compute and overlapped medians, overlap %",
    "grid": "grid: the shape, its rows and columns and the hosts they span",
    "phases_us": "grid: the median of each phase (step, row, column)",
    "phase_samples": "grid: each phase's sample count",
    "pair_map": "pairs: rank x rank time and bandwidth matrices per mode",
    "ringcs": "ring case study: algorithm, niter, ncompute_a/b, nblock, words, the compute schedule",
}


INTRA, INTER, MIXED = "intra-node", "inter-node", "mixed"


class RecordError(ValueError):
    """A line that is JSON but not a record this model understands."""


# -- field readers: each names the field and what was wrong with it ----------------------

def _get(d: Mapping, key: str, kind: str, default: Any = ...) -> Any:
    if key not in d or d[key] is None:
        if default is ...:
            raise RecordError(f"{kind} record without '{key}'")
        return default
    return d[key]


def _int(d: Mapping, key: str, kind: str, default: Any = ..., lo: int = 0, hi: int = 2**62) -> Any:
    v = _get(d, key, kind, default)
    if v is default and default is not ...:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not float(v).is_integer():
        raise RecordError(f"{kind} record: '{key}' must be a whole number, got {v!r}")
    if not lo <= v <= hi:
        raise RecordError(f"{kind} record: '{key}' = {v} is out of range ({lo} to {hi})")
    return int(v)


def _num(d: Mapping, key: str, kind: str, default: Any = ...) -> Any:
    v = _get(d, key, kind, default)
    if v is default and default is not ...:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise RecordError(f"{kind} record: '{key}' must be a finite number, got {v!r}")
    return float(v)


def _str(d: Mapping, key: str, kind: str, default: Any = ...) -> Any:
    v = _get(d, key, kind, default)
    if v is default and default is not ...:
        return v
    if not isinstance(v, str):
        raise RecordError(f"{kind} record: '{key}' must be a string, got {v!r}")
    return v


def _bool(d: Mapping, key: str, kind: str, default: Any = ...) -> Any:
    v = _get(d, key, kind, default)
    if v is default and default is not ...:
        return v
    if not isinstance(v, bool):
        raise RecordError(f"{kind} record: '{key}' must be true or false, got {v!r}")
    return v


def _obj(d: Mapping, key: str, kind: str) -> Mapping | None:
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, dict):
        raise RecordError(f"{kind} record: '{key}' must be an object, got {v!r}")
    return v


def _list(d: Mapping, key: str, kind: str) -> list:
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise RecordError(f"{kind} record: '{key}' must be a list, got {v!r}")
    return v


def _tag(d: Mapping, cls: type) -> Mapping[str, Any]:
    """What mpiscope added to a record (a part number, a study's series): every key that is
    not one of the record's own fields. Stored merged into the record's line."""
    known = _FIELDS.get(cls)
    if known is None:
        known = _FIELDS[cls] = {f.name for f in fields(cls)} | {"type"} | _EXTRA_KEYS.get(cls.__name__, set())
    return {k: v for k, v in d.items() if k not in known}


_FIELDS: dict[type, set[str]] = {}
# JSON keys a class holds elsewhere: a point's `check` object, and its row's own fields.
_EXTRA_KEYS = {"Point": {"check", *DETAIL_FIELDS}}


def _size(d: Mapping, kind: str) -> int:
    return _int(d, "size", kind, hi=SIZE_MAX_BYTES)


def _ranks(d: Mapping, kind: str) -> int:
    return _int(d, "ranks", kind, lo=1, hi=1 << 24)


# -- the records --------------------------------------------------------------------------

@dataclass(frozen=True)
class Stats:
    """Statistics of one point's samples, microseconds; None where the engine had no valid sample."""
    n: int
    median: float | None
    min: float | None = None
    mean: float | None = None
    p90: float | None = None
    p99: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    stddev: float | None = None

    @classmethod
    def from_json(cls, d: Mapping, kind: str = "point") -> "Stats":
        def opt(key: str) -> float | None:
            return _num(d, key, f"{kind} time_us", None)
        return cls(n=_int(d, "n", f"{kind} time_us", 0), median=opt("median"), min=opt("min"),
                   mean=opt("mean"), p90=opt("p90"), p99=opt("p99"), ci_low=opt("ci_low"),
                   ci_high=opt("ci_high"), stddev=opt("stddev"))


@dataclass(frozen=True)
class Pair:
    """Two ranks that exchange messages in a point, and whether they share a host."""
    ranks: tuple[int, int]
    same_host: bool


@dataclass(frozen=True)
class Rate:
    """A bandwidth: from the median time and from the fastest sample, MB/s (10^6 bytes/s)."""
    median: float | None
    max: float | None

    @classmethod
    def from_json(cls, d: Mapping | None, key: str) -> "Rate | None":
        if d is None:
            return None
        return cls(_num(d, "median", key, None), _num(d, "max", key, None))


@dataclass(frozen=True)
class RankPlace:
    """Where one rank ran (the context record's `ranks`)."""
    rank: int
    host: str
    cpus: tuple[int, ...] = ()
    bound: bool | None = None
    launch_rank: int | None = None
    pid: int | None = None
    cores_online: int | None = None


Tag = Mapping[str, Any]


@dataclass(frozen=True)
class Context:
    """The first line of every launch: the job, the library, the timer, the options."""
    world_size: int
    engine_version: str = ""
    schema_version: int = SCHEMA_VERSION
    mpi_library_version: str = ""
    mpi_version: str = ""
    start_time: str = ""
    hosts: tuple[str, ...] = ()
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
    tag: Tag = field(default_factory=dict)
    line: int = 0

    @classmethod
    def from_json(cls, d: Mapping, line: int = 0) -> "Context":
        k = "context"
        version = _int(d, "schema_version", k, SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise RecordError(f"context record of schema {version}: this mpiscope reads schema {SCHEMA_VERSION}")
        ranks = []
        for r in _list(d, "ranks", k):
            if not isinstance(r, dict):
                raise RecordError(f"context record: a rank entry must be an object, got {r!r}")
            ranks.append(RankPlace(rank=_int(r, "rank", "context rank"), host=_str(r, "host", "context rank", "?"),
                                   cpus=tuple(_int({"c": c}, "c", "context rank cpus") for c in _list(r, "cpus", k)),
                                   bound=_bool(r, "bound", "context rank", None),
                                   launch_rank=_int(r, "launch_rank", "context rank", None),
                                   pid=_int(r, "pid", "context rank", None),
                                   cores_online=_int(r, "cores_online", "context rank", None)))
        env = _obj(d, "env", k) or {}
        return cls(world_size=_int(d, "world_size", k, lo=1, hi=1 << 24),
                   engine_version=_str(d, "engine_version", k, ""), schema_version=version,
                   mpi_library_version=_str(d, "mpi_library_version", k, ""),
                   mpi_version=_str(d, "mpi_version", k, ""), start_time=_str(d, "start_time", k, ""),
                   hosts=tuple(str(h) for h in _list(d, "hosts", k)), ranks=tuple(ranks),
                   order=_str(d, "order", k, "launch"),
                   ranks_by_host=tuple(tuple(int(r) for r in h) for h in _list(d, "ranks_by_host", k)),
                   cores_online=_int(d, "cores_online", k, None),
                   oversubscribed=_bool(d, "oversubscribed", k, False), timer=_obj(d, "timer", k) or {},
                   options=_obj(d, "options", k) or {}, env={str(a): str(b) for a, b in env.items()},
                   argv=tuple(str(a) for a in _list(d, "argv", k)), cpu_mhz=_num(d, "cpu_mhz", k, None),
                   tag=_tag(d, cls), line=line)


PointKey = tuple[str, int, int, Union[str, None]]  # benchmark, size, ranks, variant


class AtPoint:
    """A record (or plan entry) that names a point: a benchmark at a size on some ranks, and a
    variant such as a grid shape. Records and plan entries are matched by this key."""
    benchmark: str
    size: int
    ranks: int
    variant: str | None

    @property
    def key(self) -> PointKey:
        return (self.benchmark, self.size, self.ranks, self.variant)


@dataclass(frozen=True)
class Point(AtPoint):
    """One measured point: a benchmark at a size on some ranks (and a variant, e.g. a grid shape)."""
    benchmark: str
    size: int
    ranks: int
    time_us: Stats
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
    converged: bool = False
    stop_reason: str = ""
    warmup: int = 0
    elapsed_s: float = 0.0
    check_errors: int | None = None       # --check: wrong bytes received
    check_verified_bytes: int | None = None
    samples_us: tuple[float, ...] = field(default=(), repr=False)  # --raw
    details: Mapping[str, Any] = field(default_factory=dict)       # the row's own fields (DETAIL_FIELDS)
    tag: Tag = field(default_factory=dict)
    line: int = 0

    # What the analysis reads of any measurement (analysis.measured.Measured).
    @property
    def median(self) -> float | None:
        return self.time_us.median

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
    def placement(self) -> str | None:
        """intra-node when every communicating pair shares a host, inter-node when none does,
        mixed otherwise (a ring over two hosts); None for points without pairs (collectives)."""
        if not self.pairs:
            return None
        same = {p.same_host for p in self.pairs}
        return INTRA if same == {True} else INTER if same == {False} else MIXED

    @classmethod
    def from_json(cls, d: Mapping, line: int = 0) -> "Point":
        k = "point"
        benchmark, size, ranks = _str(d, "benchmark", k), _size(d, k), _ranks(d, k)
        time_us = _obj(d, "time_us", k)
        if time_us is None:
            raise RecordError("point record without 'time_us'")
        check = _obj(d, "check", k)
        pairs = []
        for p in _list(d, "pairs", k):
            if not isinstance(p, dict) or not isinstance(p.get("ranks"), list) or len(p["ranks"]) != 2:
                raise RecordError(f"point record: a pair must be {{'ranks': [a, b], ...}}, got {p!r}")
            pairs.append(Pair((int(p["ranks"][0]), int(p["ranks"][1])), bool(p.get("same_host"))))
        samples = _list(d, "samples_us", k)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in samples):
            raise RecordError("point record: 'samples_us' must be numbers")
        return cls(benchmark=benchmark, size=size, ranks=ranks, time_us=Stats.from_json(time_us), family=_str(d, "family", k, ""),
                   variant=_str(d, "variant", k, None), order=_str(d, "order", k, "launch"),
                   participants=tuple(int(r) for r in _list(d, "participants", k)), pairs=tuple(pairs),
                   sample_from=_str(d, "sample_from", k, ""), sync=_str(d, "sync", k, ""),
                   invalid=_int(d, "invalid", k, 0), ops_per_event=_num(d, "ops_per_event", k, 1.0),
                   bytes_per_op=_num(d, "bytes_per_op", k, 0.0),
                   bw_MBps=Rate.from_json(_obj(d, "bw_MBps", k), "bw_MBps"),
                   busbw_factor=_num(d, "busbw_factor", k, None),
                   busbw_MBps=Rate.from_json(_obj(d, "busbw_MBps", k), "busbw_MBps"),
                   msg_rate=_num(d, "msg_rate", k, None), window_us=_num(d, "window_us", k, None),
                   clock_sync=_obj(d, "clock_sync", k), converged=_bool(d, "converged", k, False),
                   stop_reason=_str(d, "stop_reason", k, ""), warmup=_int(d, "warmup", k, 0),
                   elapsed_s=_num(d, "elapsed_s", k, 0.0),
                   check_errors=None if check is None else _int(check, "errors", "point check", 0),
                   check_verified_bytes=None if check is None else _int(check, "verified_bytes", "point check", 0),
                   samples_us=tuple(float(x) for x in samples),
                   details={key: d[key] for key in DETAIL_FIELDS if key in d},
                   tag=_tag(d, cls), line=line)


@dataclass(frozen=True)
class Skip(AtPoint):
    """A point that was not measured, and why (written by the engine, or by mpiscope after
    repeated hangs: then `source` is "mpiscope")."""
    benchmark: str
    size: int
    ranks: int
    reason: str
    variant: str | None = None
    source: str | None = None
    tag: Tag = field(default_factory=dict)
    line: int = 0

    @classmethod
    def from_json(cls, d: Mapping, line: int = 0) -> "Skip":
        k = "skip"
        return cls(benchmark=_str(d, "benchmark", k), size=_size(d, k), ranks=_ranks(d, k),
                   reason=_str(d, "reason", k, "no reason given"), variant=_str(d, "variant", k, None),
                   source=_str(d, "source", k, None), tag=_tag(d, cls), line=line)


@dataclass(frozen=True)
class Timeout(AtPoint):
    """A point that did not finish: from the engine's watchdog, or (`source` set) seen by
    mpiscope's own wall-clock limit or recovered after the watchdog's record was lost."""
    benchmark: str
    size: int
    ranks: int
    limit_s: float | None = None
    variant: str | None = None
    source: str | None = None
    tag: Tag = field(default_factory=dict)
    line: int = 0

    @classmethod
    def from_json(cls, d: Mapping, line: int = 0) -> "Timeout":
        k = "timeout"
        return cls(benchmark=_str(d, "benchmark", k), size=_size(d, k), ranks=_ranks(d, k),
                   limit_s=_num(d, "limit_s", k, None), variant=_str(d, "variant", k, None),
                   source=_str(d, "source", k, None), tag=_tag(d, cls), line=line)


@dataclass(frozen=True)
class End:
    """The last line of a launch that finished normally."""
    points: int
    elapsed_s: float = 0.0
    tag: Tag = field(default_factory=dict)
    line: int = 0

    @classmethod
    def from_json(cls, d: Mapping, line: int = 0) -> "End":
        return cls(points=_int(d, "points", "end", 0), elapsed_s=_num(d, "elapsed_s", "end", 0.0),
                   tag=_tag(d, cls), line=line)


@dataclass(frozen=True)
class Failure:
    """Written by mpiscope when a launch failed: what went wrong and, when known, the point
    that was being measured."""
    error: str
    exit_code: int | None = None
    benchmark: str | None = None
    size: int | None = None
    ranks: int | None = None
    variant: str | None = None
    source: str = "mpiscope"
    tag: Tag = field(default_factory=dict)
    line: int = 0

    @classmethod
    def from_json(cls, d: Mapping, line: int = 0) -> "Failure":
        k = "failure"
        return cls(error=_str(d, "error", k, "the launch failed"),
                   exit_code=_int(d, "exit_code", k, None, lo=-(2**31), hi=2**31),
                   benchmark=_str(d, "benchmark", k, None),
                   size=_int(d, "size", k, None, hi=SIZE_MAX_BYTES), ranks=_int(d, "ranks", k, None, lo=1),
                   variant=_str(d, "variant", k, None), source=_str(d, "source", k, "mpiscope"),
                   tag=_tag(d, cls), line=line)


Record = Union[Context, Point, Skip, Timeout, End, Failure]
RECORD_TYPES: dict[str, Callable[..., Record]] = {
    "context": Context.from_json, "point": Point.from_json, "skip": Skip.from_json,
    "timeout": Timeout.from_json, "end": End.from_json, "failure": Failure.from_json,
}


def parse_record(d: Any, line: int = 0) -> Record:
    """One decoded JSON line as its record class."""
    if not isinstance(d, dict):
        raise RecordError("not a JSON object")
    kind = d.get("type")
    if kind not in RECORD_TYPES:
        raise RecordError(f"unknown record type {kind!r} (known: {', '.join(RECORD_TYPES)})")
    return RECORD_TYPES[kind](d, line)


def to_json(rec: Record) -> dict[str, Any]:
    """A record as the JSON object it is stored as: parse_record(to_json(r)) == r, but for `line`."""
    kind = {Context: "context", Point: "point", Skip: "skip", Timeout: "timeout", End: "end",
            Failure: "failure"}[type(rec)]
    out: dict[str, Any] = {"type": kind}
    for f in fields(rec):
        v = getattr(rec, f.name)
        if f.name in ("line", "tag", "details", "check_errors", "check_verified_bytes") or v is None:
            continue
        out[f.name] = _plain(v)
    if isinstance(rec, Point):
        if rec.check_errors is not None:
            out["check"] = {"errors": rec.check_errors, "verified_bytes": rec.check_verified_bytes or 0}
        out.update(rec.details)
    return with_tag(out, rec.tag)


def with_tag(record: dict[str, Any], tag: Tag | None) -> dict[str, Any]:
    """A record's JSON object with mpiscope's tag merged in; a tag may not hide a field."""
    if not tag:
        return record
    clash = set(tag) & (set(record) | set(DETAIL_FIELDS) | {"type", "benchmark", "size", "ranks", "variant"})
    if clash:
        raise ValueError(f"a tag may not hide the record's own fields: {sorted(clash)}")
    return {**record, **tag}


def _plain(v: Any) -> Any:
    """Dataclasses, tuples and mappings as JSON values."""
    if isinstance(v, (Stats, Rate, RankPlace)):
        return {f.name: _plain(getattr(v, f.name)) for f in fields(v) if getattr(v, f.name) is not None}
    if isinstance(v, Pair):
        return {"ranks": list(v.ranks), "same_host": v.same_host}
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    return v
