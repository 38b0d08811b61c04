"""Dataclasses to and from JSON, each field checked against its type hint: the records, run.json
and the saved measurements all go through here, so a file of the wrong shape is a ShapeError
that names the field, never a wrong value or a traceback further on."""
from __future__ import annotations

import collections.abc
import dataclasses
import math
import sys
import types
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")


class ShapeError(ValueError):
    """JSON that is not what the class expects; the message names the field."""


def bounded(lo: int, hi: int, **kw: Any) -> Any:
    """A dataclass field of whole numbers from lo to hi."""
    return dataclasses.field(metadata={"range": (lo, hi)}, **kw)


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


SHARED_TUPLE, SHARED_TUPLES = 64, 1 << 12  # tuples up to this long are shared, this many of each type
Conv = Callable[[Any, str], Any]  # (value, where it is) -> the value as its type, or a ShapeError


@lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[tuple[str, bool, Conv, type | None], ...]:
    """Each init field of `cls`: its name, whether it is required, its converter, and the JSON
    type whose values it takes as they are (see _as_is), worked out once per class (a records
    file of 300,000 lines loads the same few classes over and over)."""
    hints = _hints(cls)
    return tuple((f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
                  _converter(hints[f.name], f.metadata.get("range")),
                  None if f.metadata.get("range") else _as_is(hints[f.name]))
                 for f in dataclasses.fields(cls) if f.init)


def _as_is(tp: Any) -> type | None:
    """str, bool, int or float when a JSON value of exactly that type is already what the
    converter of `tp` would return (a float only when finite): most fields of most records, taken
    without a call; None for the rest."""
    if get_origin(tp) in (Union, types.UnionType):
        inner = [a for a in get_args(tp) if a is not type(None)]
        tp = inner[0] if len(inner) == 1 else None
    return tp if tp in (str, bool, int, float) else None


def load(cls: type[T], data: Any, where: str | None = None) -> T:
    """An instance of the dataclass `cls` from a JSON object. Missing or null fields take their
    defaults (a field without one is required); keys the class does not have are ignored."""
    return _loader(cls)(data, where or cls.__name__)


@lru_cache(maxsize=None)
def _loader(cls: type) -> Callable[[Any, str], Any]:
    """`load` of one class written out as Python once per class: each field's lookup, check and
    conversion inline, and the class called with every field (its default where the object has
    none), not a loop over `_fields` with a call per field and a dict of keywords (a
    records file of 300,000 lines is mostly a few classes)."""
    _building.add(cls)
    try:
        return _write_loader(cls)
    finally:
        _building.discard(cls)


_building: set[type] = set()  # the classes whose loader is being written: one that holds itself looks it up when called


def _plain_mapping(tp: Any) -> bool:
    """A hint of a JSON object whose values are taken as they are (Mapping[str, Any], dict)."""
    origin, args = get_origin(tp), get_args(tp)
    return (origin in (dict, collections.abc.Mapping) or tp in (dict, Mapping)) and not (
        len(args) == 2 and args[1] is not Any)


def _write_loader(cls: type) -> Callable[[Any, str], Any]:
    """The loader `_loader` describes: its text, then the function it defines."""
    env: dict[str, Any] = {"cls": cls, "ShapeError": ShapeError, "intern": sys.intern}
    body = ["def load_one(data, where):",
            "    if not isinstance(data, dict):",
            "        raise ShapeError(f'{where}: expected an object, got {data!r}')",
            "    get = data.get"]
    declared, hints = {f.name: f for f in dataclasses.fields(cls)}, _hints(cls)
    positional, keywords = [], []  # the arguments in the order __init__ takes them
    for i, (name, required, conv, as_is) in enumerate(_fields(cls)):
        v, f = f"a{i}", declared[name]
        bounds, tp = f.metadata.get("range"), _optional(hints[name])
        # past the None check: an optional field's own converter, not the one that also takes None
        env[f"conv{i}"], env[f"as_is{i}"] = conv if tp is None else _converter(tp, bounds), as_is
        nested = tp or hints[name]
        if dataclasses.is_dataclass(nested) and nested not in _building:  # its loader called directly
            env[f"conv{i}"] = _loader(nested)
        if f.kw_only is True:
            keywords.append(f"{name}={v}")
        else:
            positional.append(v)
        body += [f"    {v} = get({name!r})", f"    if {v} is None:"]
        if required:
            body.append(f"        raise ShapeError(where + {f' without {name!r}'!r})")
        elif f.default is not dataclasses.MISSING:
            env[f"default{i}"] = f.default
            body.append(f"        {v} = default{i}")
        else:
            env[f"factory{i}"] = f.default_factory
            body.append(f"        {v} = factory{i}()")
        if as_is is float:  # x - x is nan for inf and nan: those go through the converter
            body += [f"    elif type({v}) is float and {v} - {v} == 0.0:", "        pass",
                     f"    elif type({v}) is int:",  # a whole number where a float goes: the converter's float()
                     f"        {v} = float({v})", "    else:"]
        elif _plain_mapping(tp or hints[name]):  # a copy of the object, as the converter makes it
            body += [f"    elif type({v}) is dict:", f"        {v} = dict({v})", "    else:"]
        elif as_is is str:  # one copy of each text: a benchmark's or a mode's name repeats in 300,000 points
            body += [f"    elif type({v}) is str:", f"        {v} = intern({v})", "    else:"]
        elif as_is is not None:
            body.append(f"    elif type({v}) is not as_is{i}:")
        elif bounds is not None and (tp or hints[name]) is int:  # a whole number in its range as it is
            body.append(f"    elif not (type({v}) is int and {bounds[0]!r} <= {v} <= {bounds[1]!r}):")
        else:
            body.append("    else:")
        body.append(f"        {v} = conv{i}({v}, where + {f': {name!r}'!r})")
    if _settable(cls):  # each slot set as __init__ sets it, without its object.__setattr__ call per field
        names = [name for name, *_ in _fields(cls)]
        env.update(new=object.__new__, **{f"set{i}": cls.__dict__[name].__set__ for i, name in enumerate(names)})
        body += ["    obj = new(cls)", *(f"    set{i}(obj, a{i})" for i in range(len(names)))]
        body += ["    obj.__post_init__()"] if hasattr(cls, "__post_init__") else []
        body.append("    return obj")
    else:
        body.append(f"    return cls({', '.join(positional + keywords)})")
    exec("\n".join(body), env)  # noqa: S102 - the text above, made of the class's field names only
    return env["load_one"]


def _settable(cls: type) -> bool:
    """A dataclass with slots whose __init__ is the one dataclasses wrote and only sets its fields
    (every field an init field, no InitVar): an instance can be made by setting its slots."""
    init = cls.__dict__.get("__init__")
    fields_ = dataclasses.fields(cls)
    return ("__slots__" in cls.__dict__ and getattr(init, "__code__", None) is not None
            and init.__code__.co_filename == "<string>" and all(f.init for f in fields_)
            and len(fields_) == len(cls.__dataclass_fields__)
            and all(isinstance(cls.__dict__.get(f.name), types.MemberDescriptorType) for f in fields_))


def _optional(tp: Any) -> Any:
    """X of a hint `X | None` (None for any other hint)."""
    if get_origin(tp) in (Union, types.UnionType):
        args = get_args(tp)
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1 and len(args) == 2:
            return inner[0]
    return None


def convert(tp: Any, v: Any, where: str, bounds: tuple[int, int] | None = None) -> Any:
    """`v` as the type `tp` (str, int, float, bool, Path, Any, unions with None, tuples, lists,
    dicts and dataclasses), or a ShapeError."""
    return _converter(tp, bounds)(v, where)


@lru_cache(maxsize=None)
def _converter(tp: Any, bounds: tuple[int, int] | None = None) -> Conv:
    """The function that converts a JSON value to `tp`, built once per type."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            return lambda v, where: v
        one, nullable = _converter(inner[0], bounds), type(None) in args
        return lambda v, where: None if v is None and nullable else one(v, where)
    if tp is Any:
        return lambda v, where: v
    if tp is bool:
        return lambda v, where: _check(isinstance(v, bool), v, where, "true or false")
    if tp is int:
        return lambda v, where: _int(v, where, bounds)
    if tp is float:
        return lambda v, where: float(_check(not isinstance(v, bool) and isinstance(v, (int, float))
                                             and math.isfinite(v), v, where, "a finite number"))
    if tp is str:
        return lambda v, where: _check(isinstance(v, str), v, where, "a string")
    if tp is Path:
        return lambda v, where: Path(_check(isinstance(v, str), v, where, "a path"))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each, as_is = _converter(args[0]), _as_is(args[0])

            only = frozenset({as_is}) if as_is is not None and as_is is not float else frozenset()
            # equal tuples of this type made once: the points of a run name the same ranks and
            # CPUs (a 200 MB records file holds 600,000 such tuples, of a few values)
            made: dict[tuple, tuple] = {}

            def many(v: Any, where: str) -> tuple:
                _check(isinstance(v, list), v, where, "a list")
                if not v:  # most points' pairs
                    return ()
                if only and set(map(type, v)) <= only:  # the element types found in C
                    t = tuple(v)  # the usual list of ranks or CPUs: every element as it is
                    if len(t) > SHARED_TUPLE:
                        return t
                    if len(made) >= SHARED_TUPLES:
                        made.clear()
                    return made.setdefault(t, t)
                return tuple(each(x, f"{where}[{i}]") for i, x in enumerate(v))
            return many
        convs = [_converter(a) for a in args]

        same = _as_is(args[0]) if len(set(args)) == 1 and args[0] is not float else None

        def fixed(v: Any, where: str) -> tuple:
            _check(isinstance(v, list), v, where, "a list")
            _check(len(v) == len(convs), v, where, f"a list of {len(convs)}")
            if same is not None and set(map(type, v)) <= {same}:  # a pair of ranks
                return tuple(v)
            return tuple(c(x, f"{where}[{i}]") for i, (c, x) in enumerate(zip(convs, v)))
        return fixed
    if origin is list:
        each = _converter(args[0])
        return lambda v, where: [each(x, f"{where}[{i}]")
                                 for i, x in enumerate(_check(isinstance(v, list), v, where, "a list"))]
    if origin in (dict, collections.abc.Mapping) or tp in (dict, Mapping):
        if len(args) == 2 and args[1] is not Any:
            value = _converter(args[1])
            return lambda v, where: {str(k): value(x, f"{where}.{k}")
                                     for k, x in _check(isinstance(v, dict), v, where, "an object").items()}
        return lambda v, where: dict(_check(isinstance(v, dict), v, where, "an object"))
    if dataclasses.is_dataclass(tp):  # looked up when called: a class may hold itself
        return lambda v, where: _loader(tp)(v, where)
    raise TypeError(f"typed.convert does not know {tp!r}")


def _int(v: Any, where: str, bounds: tuple[int, int] | None) -> int:
    ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and float(v).is_integer()
    _check(ok, v, where, "a whole number")
    if bounds and not bounds[0] <= v <= bounds[1]:
        raise ShapeError(f"{where} = {v} is out of range ({bounds[0]} to {bounds[1]})")
    return int(v)


def _check(ok: bool, v: Any, where: str, what: str) -> Any:
    if not ok:
        raise ShapeError(f"{where} must be {what}, got {v!r}")
    return v


_PLAIN = frozenset({str, int, float, bool, type(None)})  # the most of any record: as they are, without a call


def dump(obj: Any) -> Any:
    """A dataclass (and what it holds) as JSON values; None fields are left out."""
    kind = type(obj)
    if kind in _PLAIN:
        return obj
    dumper = _dumper(kind, False)
    if dumper is not None:
        return dumper(obj)
    if kind is tuple or kind is list or (kind is not dict and isinstance(obj, (tuple, list))):
        return [x if type(x) in _PLAIN else dump(x) for x in obj]
    if kind is dict or isinstance(obj, Mapping):
        return {str(k): v if type(v) in _PLAIN else dump(v) for k, v in obj.items()}
    if isinstance(obj, Path):
        return str(obj)
    return obj


def shallow(obj: Any) -> dict[str, Any]:
    """The fields of a dataclass instance that are not None, as they are (nothing dumped): for a
    serialiser that writes the values itself (orjson's `default`); TypeError for anything else."""
    dumper = _dumper(type(obj), False, False)
    if dumper is None:
        raise TypeError(f"{type(obj)!r} is not a dataclass")
    return dumper(obj)


def fields_of(cls: type, given: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of cls(**given) that are not None, as they are (nothing dumped), without making
    the instance: a field not given takes its default (a class's __post_init__ checks are the
    caller's). What an importer writes a million times, for orjson to serialise."""
    dumper = _dumper(cls, True, False)
    if dumper is None:
        raise TypeError(f"{cls!r} is not a dataclass")
    return dumper(given)


@lru_cache(maxsize=None)
def _dumper(cls: type, from_fields: bool, deep: bool = True) -> Callable[[Any], dict[str, Any]] | None:
    """`dump` of one dataclass (or, `from_fields`, of its fields' values in a mapping; not `deep`:
    the values as they are), written out as Python once per class: each field read by name, not
    by a loop of getattr calls. None for a type that is no dataclass."""
    if not dataclasses.is_dataclass(cls):
        return None
    env: dict[str, Any] = {"plain": _PLAIN, "dump": dump}
    body = ["def dump_one(obj):", "    out = {}"]
    for i, f in enumerate(dataclasses.fields(cls)):
        if not from_fields:
            body.append(f"    v = obj.{f.name}")
        elif f.default is not dataclasses.MISSING:
            env[f"default{i}"] = f.default
            body.append(f"    v = obj.get({f.name!r}, default{i})")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"factory{i}"] = f.default_factory
            body.append(f"    v = obj[{f.name!r}] if {f.name!r} in obj else factory{i}()")
        else:
            body.append(f"    v = obj[{f.name!r}]")
        body += ["    if v is not None:",
                 f"        out[{f.name!r}] = " + ("v if type(v) in plain else dump(v)" if deep else "v")]
    body.append("    return out")
    exec("\n".join(body), env)  # noqa: S102 - the text above, made of the class's field names only
    return env["dump_one"]
