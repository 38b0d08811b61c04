"""Dataclasses to and from JSON, each field checked against its type hint: the records, run.json
and the saved measurements all go through here, so a file of the wrong shape is a ShapeError
that names the field, never a wrong value or a traceback further on."""
from __future__ import annotations

import collections.abc
import dataclasses
import math
import types
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")


class ShapeError(ValueError):
    """JSON that is not what the class expects; the message names the field."""


def bounded(lo: int, hi: int, **kw: Any) -> Any:
    """A dataclass field of whole numbers from lo to hi."""
    return dataclasses.field(metadata={"range": (lo, hi)}, **kw)


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def load(cls: type[T], data: Any, where: str | None = None) -> T:
    """An instance of the dataclass `cls` from a JSON object. Missing or null fields take their
    defaults (a field without one is required); keys the class does not have are ignored."""
    where = where or cls.__name__
    if not isinstance(data, dict):
        raise ShapeError(f"{where}: expected an object, got {data!r}")
    hints, kw = _hints(cls), {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        value = data.get(f.name)
        if value is None:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ShapeError(f"{where} without '{f.name}'")
            continue
        kw[f.name] = convert(hints[f.name], value, f"{where}: '{f.name}'", f.metadata.get("range"))
    return cls(**kw)


def convert(tp: Any, v: Any, where: str, bounds: tuple[int, int] | None = None) -> Any:
    """`v` as the type `tp` (str, int, float, bool, Path, Any, unions with None, tuples, lists,
    dicts and dataclasses), or a ShapeError."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return convert(inner[0], v, where, bounds) if len(inner) == 1 else v
    if tp is Any:
        return v
    if tp is bool:
        return _check(isinstance(v, bool), v, where, "true or false")
    if tp is int:
        ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and float(v).is_integer()
        _check(ok, v, where, "a whole number")
        if bounds and not bounds[0] <= v <= bounds[1]:
            raise ShapeError(f"{where} = {v} is out of range ({bounds[0]} to {bounds[1]})")
        return int(v)
    if tp is float:
        ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
        return float(_check(ok, v, where, "a finite number"))
    if tp is str:
        return _check(isinstance(v, str), v, where, "a string")
    if tp is Path:
        return Path(_check(isinstance(v, str), v, where, "a path"))
    if origin is tuple:
        _check(isinstance(v, list), v, where, "a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert(args[0], x, f"{where}[{i}]") for i, x in enumerate(v))
        _check(len(v) == len(args), v, where, f"a list of {len(args)}")
        return tuple(convert(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(args, v)))
    if origin is list:
        _check(isinstance(v, list), v, where, "a list")
        return [convert(args[0], x, f"{where}[{i}]") for i, x in enumerate(v)]
    if origin in (dict, collections.abc.Mapping) or tp in (dict, Mapping):
        _check(isinstance(v, dict), v, where, "an object")
        if len(args) == 2 and args[1] is not Any:
            return {str(k): convert(args[1], x, f"{where}.{k}") for k, x in v.items()}
        return dict(v)
    if dataclasses.is_dataclass(tp):
        return load(tp, v, where)
    raise TypeError(f"typed.convert does not know {tp!r}")


def _check(ok: bool, v: Any, where: str, what: str) -> Any:
    if not ok:
        raise ShapeError(f"{where} must be {what}, got {v!r}")
    return v


def dump(obj: Any) -> Any:
    """A dataclass (and what it holds) as JSON values; None fields are left out."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: dump(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if getattr(obj, f.name) is not None}
    if isinstance(obj, Mapping):
        return {str(k): dump(v) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return [dump(x) for x in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj
