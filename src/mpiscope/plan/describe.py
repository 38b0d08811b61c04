"""The one description of an experiment (`Description`): every option a measurement takes, its
default, and the one validation that `mpiscope run` flags, the API's keywords, a sweep spec and
the studies all go through. A problem names the field as the front end spells it: a flag for the
CLI (`--ci-target`), a keyword for the API (`ci_target`), a key for a spec (`measure.ci_target`).
planner.py turns a description into a Measurement."""
from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field, fields, replace
from difflib import get_close_matches
from typing import Any, Callable, Mapping, Sequence

from mpiscope.util.errors import UsageError
from mpiscope.launchers import BINDINGS, LAUNCHERS, MAPPINGS
from mpiscope.plan.engine import DEFAULT_SIZES, range_typo
from mpiscope.plan.repetition import default_launches, parse_launches

UNITS = ("bytes", "words")


@dataclass(frozen=True)
class Description:
    """Everything one measurement needs, checked. `benchmarks` None is the characterisation (pair
    benchmarks on two ranks, then the main collectives on every core); `launches` None is auto;
    None elsewhere leaves the choice to the engine or the launcher."""
    benchmarks: tuple[str, ...] | None = None
    sizes: str = DEFAULT_SIZES
    units: str = "bytes"
    ranks: int | None = None
    mpi: str | None = None
    ci_target: float | None = None
    max_time: float | None = None
    timeout: float | None = None      # a hard limit per point phase (the engine's --timeout)
    reps: int | None = None
    time_budget: float | None = None
    launches: int | None = None
    launch_target: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    launcher_args: tuple[str, ...] = ()
    engine_args: tuple[str, ...] = ()
    check: bool = False
    raw: bool = False
    order: str | None = None
    launcher: str | None = None
    hosts: tuple[str, ...] | None = None
    hostfile: str | None = None
    nodes: int | None = None
    ranks_per_node: int | None = None
    map_by: str | None = None
    bind_to: str | None = None
    platform: str | None = None       # a simulated platform (SMPI): a description or an XML file
    max_hosts: int | None = None      # the cap on a --hosts list (launch.placement.MAX_HOSTS)
    max_sizes: int | None = None      # the cap on a size list (plan.sizecap.MAX_SIZES)
    oversubscribe: bool = False
    find_switches: bool = False
    # `mpiscope tune` (docs/tune.md): the rank counts raced, the race's and the proof's launches,
    # the liveness check's, no racing, the algorithms raced per collective
    rank_counts: tuple[int, ...] | None = None
    rounds: int = 4
    verify_launches: int = 3
    verify_max_launches: int | None = None  # None: max(8, verify_launches)
    live_launches: int = 3
    exhaustive: bool = False
    algorithms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    factors: dict[str, Any] = field(default_factory=dict)  # a sweep configuration's levels: labels, not options

    @property
    def default_plan(self) -> bool:
        """The characterisation with its own sizes (no benchmarks, no sizes asked for): sparse
        sizes, refined around the switches it finds within the run's budget (execute/refine.py)."""
        return self.benchmarks is None and self.sizes == DEFAULT_SIZES


# -- what each field accepts: a parser raises ValueError with the problem, never the field's name --

def _no_nul(text: str) -> str:
    if "\0" in text:
        raise ValueError(f"holds a NUL character ({text!r}), which no command line or environment can carry")
    return text


def _text(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ValueError(f"expects a string, got {v!r}")
    text = _no_nul(str(v))
    if not text.strip():
        raise ValueError("is empty: give a value or leave it out for the default")
    return text


def _mpi(v: Any) -> str:
    if isinstance(v, str) and not v.strip():  # `--mpi ''` is a slip, not a request for the default
        raise ValueError("name is empty: give one of `mpiscope mpi list`, or leave it out for the default")
    return _text(v)


def _whole(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError(f"expects a whole number, got {v!r}")
    try:
        n = int(v) if not isinstance(v, float) or v.is_integer() else None
    except (TypeError, ValueError):
        n = None
    if n is None:
        raise ValueError(f"expects a whole number, got '{v}'")
    if n < 1:
        raise ValueError(f"must be at least 1, got {n}")
    return n


def _number(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError(f"expects a number, got {v!r}")
    text = str(v).strip()
    try:
        x = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"expects a number, got '{v}'") from None
    if math.isinf(x):
        raise ValueError(f"expects a number, got '{v}' (not a finite number)")
    return x


def _positive(v: Any) -> float:
    x = _number(v)
    if not x > 0:  # NaN fails too
        raise ValueError(f"must be a positive number, got {v}")
    return x


def _fraction(v: Any) -> float:
    """A relative target: 0.05 or 5% (+-5 % of the estimate)."""
    x = _number(v)
    if not 0 < x < 1:
        raise ValueError(f"must be a fraction between 0 and 1 (0.05 or 5%: +-5 %), got {v}")
    return x


def _choice(options: Sequence[str]) -> Callable[[Any], str]:
    def parse(v: Any) -> str:
        if v not in options:
            close = get_close_matches(str(v), options, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ValueError(f"unknown value {v!r}: {hint}use one of {', '.join(options)}")
        return v
    return parse


def _flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expects true or false, got {v!r}")
    return v


def _argv(v: Any) -> tuple[str, ...]:
    """Launcher or engine arguments: one shell-quoted string, or a list of strings."""
    if isinstance(v, str):
        try:
            args = tuple(_no_nul(x) for x in shlex.split(v))
        except ValueError as e:
            raise ValueError(f"'{v}' cannot be split ({e}): balance the quotes") from None
    elif isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        args = tuple(_no_nul(x) for x in v)
    else:
        raise ValueError(f"expects a string such as \"--mca btl self,vader\" or a list of strings, got {v!r}")
    if ":" in args:  # on the launcher's command line it would start a second program (MPMD)
        raise ValueError("holds a lone ':', which mpiexec, mpirun and srun take as the separator of a second "
                         "program: leave it out or quote it inside an option's value")
    return args


def _names(v: Any) -> tuple[str, ...]:
    """Benchmark names: a list, or one comma-separated string; each once."""
    names = [x.strip() for x in v.split(",")] if isinstance(v, str) else v
    if not isinstance(names, (list, tuple)) or not all(isinstance(x, str) for x in names):
        raise ValueError(f"expects benchmark names, comma-separated or a list, got {v!r}")
    names = [_no_nul(x) for x in names if x.strip()]
    if not names:
        raise ValueError(f"expects one or more names, comma-separated, got '{v}'")
    twice = sorted({x for x in names if names.count(x) > 1})
    if twice:
        raise ValueError(f"names {', '.join(repr(x) for x in twice)} more than once: give each benchmark once")
    return tuple(names)


def _sizes(v: Any) -> str:
    """The engine's size expression (the engine checks it when it plans); a list of sizes is
    joined. A-B, the usual slip for a range, is refused with the range it meant."""
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return ",".join(map(str, v))
    text = _text(v)
    typo = range_typo(text)
    if typo:
        raise ValueError(typo)
    return text


_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env(v: Any) -> dict[str, str]:
    """The ranks' environment: a mapping, or NAME=VALUE items (each name once)."""
    if isinstance(v, Mapping):
        items = [(k, x, f"{k}={x}") for k, x in v.items()]
    elif isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        items = [(*x.partition("=")[::2], x) if "=" in x else (None, None, x) for x in v]
    else:
        raise ValueError(f"expects NAME=VALUE items or a table of variables, got {v!r}")
    out: dict[str, str] = {}
    for key, value, item in items:
        if key is None or not isinstance(key, str) or not _VAR.fullmatch(key):
            what = f" ('{key}' is not a valid variable name)" if key else ""
            raise ValueError(f"expects NAME=VALUE with a valid variable name, got '{item}'{what}")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"expects a string value for {key}, got {value!r}")
        if key in out:
            raise ValueError(f"sets {key} twice ({key}={out[key]}, {key}={value}): give each variable once")
        out[key] = _no_nul(str(value))
    return out


# A host name (RFC 1123: labels of letters, digits and '-' between dots, none empty, at most 253
# characters; '_' as some clusters use), and slots after ':'.
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOST = re.compile(rf"(?=[^:]{{1,253}}(?::|$)){_LABEL}(?:\.{_LABEL})*(:[1-9][0-9]{{0,5}})?")


def _hosts(v: Any) -> tuple[str, ...]:
    hosts = [h.strip() for h in v.split(",")] if isinstance(v, str) else v
    if not isinstance(hosts, (list, tuple)) or not hosts or not all(isinstance(h, str) and h for h in hosts):
        raise ValueError(f"expects host names separated by commas (a,b or a:2,b:2), got {v!r}")
    for h in hosts:
        if not _HOST.fullmatch(h):
            raise ValueError(f"'{h}' is not a host name: use letters, digits, '-', '.' and '_' (no empty part "
                             f"between dots), and NAME:SLOTS for slots (a:2)")
    return tuple(hosts)


def _rank_counts(v: Any) -> tuple[int, ...]:
    """Rank counts, each once, in order: 4, "2,4" or [2, 4]."""
    items = v.split(",") if isinstance(v, str) else v if isinstance(v, (list, tuple)) else [v]
    try:
        out = tuple(sorted({_whole(x.strip() if isinstance(x, str) else x) for x in items if str(x).strip()}))
    except ValueError:
        out = ()
    if not out or out[0] < 2:
        raise ValueError(f"expects rank counts of 2 or more, e.g. 4 or 2,4, got '{v}'")
    return out


def _launches_a_side(why: str, allow_none: bool = False) -> Callable[[Any], int]:
    """A count of launches that needs two or more (`why`); with `allow_none`, 0 too."""
    def parse(v: Any) -> int:
        n = 0 if allow_none and not isinstance(v, bool) and str(v).strip() == "0" else _whole(v)
        if n == 1:
            raise ValueError(f"must be {'0 (no check) or ' if allow_none else ''}2 or more: {why}")
        return n
    return parse


def _algorithms(v: Any) -> dict[str, tuple[str, ...]]:
    """COLLECTIVE=ALG,ALG items (or a table of lists): the algorithms raced per collective."""
    if isinstance(v, Mapping):
        items = [(str(k), x) for k, x in v.items()]
    elif isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        items = [(x.partition("=")[0].strip(), x.partition("=")[2]) if "=" in x else ("", x) for x in v]
    else:
        raise ValueError(f"expects COLLECTIVE=ALG,ALG items or a table of lists, got {v!r}")
    out: dict[str, tuple[str, ...]] = {}
    for coll, names in items:
        algs = tuple(_names(names)) if coll and names else ()
        if not algs:
            raise ValueError(f"expects COLLECTIVE=ALG,ALG, got '{coll}={names}'" if coll else
                             f"expects COLLECTIVE=ALG,ALG, got '{names}'")
        out[_no_nul(coll)] = algs
    return out


@dataclass(frozen=True)
class Field:
    """One option of the description: how each front end names it and what it accepts."""
    name: str                  # the attribute and the API keyword
    parse: Callable[[Any], Any]
    flag: str = ""             # `mpiscope run`'s option (default --name-with-dashes)
    key: str = ""              # a spec's key under [measure] (default the name)

    def __post_init__(self) -> None:
        object.__setattr__(self, "flag", self.flag or "--" + self.name.replace("_", "-"))
        object.__setattr__(self, "key", self.key or self.name)


FIELDS: dict[str, Field] = {f.name: f for f in (
    Field("benchmarks", _names, flag="-b/--bench"),
    Field("sizes", _sizes),
    Field("units", _choice(UNITS)),
    Field("ranks", _whole, flag="-n/--ranks"),
    Field("mpi", _mpi),
    Field("ci_target", _positive),
    Field("max_time", _positive),
    Field("timeout", _positive),
    Field("reps", _whole),
    Field("time_budget", _positive),
    Field("launches", parse_launches),
    Field("launch_target", _fraction),
    Field("env", _env),
    Field("launcher_args", _argv),
    Field("engine_args", _argv, key="engine_options"),
    Field("check", _flag),
    Field("raw", _flag),
    Field("order", _text),
    Field("launcher", _choice(LAUNCHERS)),
    Field("hosts", _hosts),
    Field("hostfile", _text),
    Field("nodes", _whole),
    Field("ranks_per_node", _whole),
    Field("map_by", _choice(MAPPINGS), key="mapping"),
    Field("bind_to", _choice(BINDINGS), key="binding"),
    Field("platform", _text),
    Field("max_hosts", _whole),
    Field("max_sizes", _whole),
    Field("oversubscribe", _flag),
    Field("find_switches", _flag),
    Field("rank_counts", _rank_counts, flag="-n/--ranks"),
    Field("rounds", _launches_a_side("the race needs two launches to see the noise")),
    Field("verify_launches", _launches_a_side("one launch a side gives no interval")),
    Field("verify_max_launches", _whole),
    Field("live_launches", _launches_a_side("one launch a side gives no interval", allow_none=True)),
    Field("exhaustive", _flag),
    Field("algorithms", _algorithms),
)}
SPEC_KEYS = {f.key: f.name for f in FIELDS.values()}
# the fields only `mpiscope tune` reads (a run given one would ignore it)
TUNE_ONLY = ("rank_counts", "rounds", "verify_launches", "verify_max_launches", "live_launches", "exhaustive",
             "algorithms")


@dataclass(frozen=True)
class Front:
    """How one front end names a field in its messages."""
    kind: str             # cli, api or spec
    where: str = ""       # spec: the table the values came from (measure, factors)

    def name(self, f: Field) -> str:
        if self.kind == "cli":
            return f.flag
        if self.kind == "api":
            return f.name
        return f"{self.where}.{f.key}" if self.where else f.key

    def word(self, f: Field, problem: str) -> str:
        return f"{self.name(f)}: {problem}" if self.kind == "spec" else f"{self.name(f)} {problem}"

    def unknown(self, name: str) -> UsageError:
        known = list(FIELDS) if self.kind != "spec" else list(SPEC_KEYS)
        close = get_close_matches(name, known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        what = {"api": "keyword", "cli": "option"}.get(self.kind, "key")
        where = f"{self.where}.{name}" if self.where else name
        return UsageError(f"{where}: unknown {what}: {hint}known: {', '.join(known)}")


CLI, API, SPEC = Front("cli"), Front("api"), Front("spec", "measure")


def parse_field(name: str, value: Any, front: Front) -> Any:
    """One field's value, checked; a UsageError worded for `front`."""
    try:
        return FIELDS[name].parse(value)
    except ValueError as e:
        raise UsageError(front.word(FIELDS[name], str(e))) from None


def describe(values: Mapping[str, Any], front: Front = API, base: Description | None = None) -> Description:
    """The description from `values` (field name -> value as the front end gives it; None: the
    default, or `base`'s), checked once. Launches not given: $MPISCOPE_LAUNCHES, else auto."""
    kw: dict[str, Any] = {}
    for name, value in values.items():
        if name not in FIELDS:
            raise front.unknown(name)
        if value is not None:
            kw[name] = parse_field(name, value, front)
    if base is None and "launches" not in kw:
        kw["launches"] = default_launches()
    d = replace(base or Description(), **kw)
    if d.hosts is not None and d.hostfile is not None:
        raise UsageError(f"{front.name(FIELDS['hosts'])} and {front.name(FIELDS['hostfile'])} both name the "
                         f"hosts: give one of them")
    if d.verify_max_launches is not None and d.verify_max_launches < d.verify_launches:
        raise UsageError(f"{front.name(FIELDS['verify_max_launches'])} ({d.verify_max_launches}) is below "
                         f"{front.name(FIELDS['verify_launches'])} ({d.verify_launches}): give at least "
                         f"{d.verify_launches}")
    raced = [c for c in d.algorithms if d.benchmarks is not None and c not in d.benchmarks]
    if raced:
        raise UsageError(f"{front.name(FIELDS['algorithms'])} names {raced[0]}, which is not among the collectives "
                         f"measured: add it to them")
    return d


def given(d: Description) -> dict[str, Any]:
    """The fields of `d` that differ from the defaults (launches always: it is the run's own)."""
    default = Description()
    return {f.name: getattr(d, f.name) for f in fields(Description)
            if f.name in FIELDS and (getattr(d, f.name) != getattr(default, f.name) or f.name == "launches")}


def to_json(d: Description) -> dict[str, Any]:
    """The description as run.json keeps it: every option given, tuples as lists."""
    out: dict[str, Any] = {k: list(v) if isinstance(v, tuple) else v for k, v in given(d).items()}
    out["launches"] = "auto" if d.launches is None else d.launches
    if d.factors:
        out["factors"] = dict(d.factors)
    return out


def from_json(data: Any, where: str) -> Description:
    """A description that run.json kept, checked again (a hand-edited file is no exception)."""
    if not isinstance(data, dict):
        raise UsageError(f"{where}: the stored description is not an object: measure again")
    values = {k: v for k, v in data.items() if k != "factors"}
    try:
        d = describe(values, API)
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from None
    return replace(d, factors=dict(data.get("factors") or {}))
