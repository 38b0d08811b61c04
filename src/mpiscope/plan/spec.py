"""Experiment specs (TOML): factors with levels, how they combine, what each configuration measures.

`load_spec(path)` checks every key and value (errors name the TOML path and
suggest the right key; what the engine measures, such as the size expression, the
engine checks when the sweep is planned) and `expand(spec)` turns it into the
configurations a sweep launches, each with every factor's level, so each result
carries them.
"""
from __future__ import annotations

import itertools
import math
import shlex
import sys
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Callable, Iterable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from mpiscope.plan.describe import SPEC, SPEC_KEYS, Description, Front, describe, parse_field
from mpiscope.util import bounded
from mpiscope.util.errors import UsageError

MAX_SPEC_BYTES = 1 << 20  # a spec is a page of TOML; its source is kept in every sweep.json
TOP_KEYS = ("name", "description", "launches", "measure", "factors", "combine", "exclude")
COMBINE_KEYS = ("mode", "zip")


def _hint(word: str, known: Iterable[str], cutoff: float = 0.6) -> str:
    close = get_close_matches(word, list(known), n=1, cutoff=cutoff)
    return f"did you mean '{close[0]}'? " if close else ""


def _unknown(path: str, key: str, known: Iterable[str]) -> UsageError:
    where = f"{path}.{key}" if path else key
    return UsageError(f"{where}: unknown key: {_hint(key, known, 0.5)}known keys here: {', '.join(known)}")


def _check_keys(table: dict, path: str, known: tuple[str, ...]) -> None:
    for key in table:
        if key not in known:
            raise _unknown(path, key, known)


def _checked(ok: Callable[[Any], bool], expected: str, cast: Callable[[Any], Any] = lambda v: v
             ) -> Callable[[str], Callable[[Any], Any]]:
    """A converter for the value at a TOML path: `cast(v)`, or an error saying what was expected."""
    def make(path: str) -> Callable[[Any], Any]:
        def conv(v: Any) -> Any:
            if not ok(v):
                raise UsageError(f"{path}: expected {expected}, got {v!r}")
            return cast(v)
        return conv
    return make


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_string = _checked(lambda v: _number(v) or isinstance(v, str), "a string", str)


def _field(name: str) -> Callable[[str], Callable[[Any], Any]]:
    """A description field's one check, worded for the spec path it was read at."""
    def make(path: str) -> Callable[[Any], Any]:
        table, _, _ = path.rpartition(".")
        return lambda v: parse_field(name, v, Front("spec", table))
    return make


# The description's fields a spec can vary from configuration to configuration.
FACTOR_TYPES: dict[str, Callable[[str], Callable[[Any], Any]]] = {
    key: _field(SPEC_KEYS[key]) for key in ("mpi", "ranks", "nodes", "ranks_per_node", "mapping", "binding",
                                            "hosts", "hostfile", "launcher", "launcher_args", "engine_options")}
FACTOR_KEYS = (*FACTOR_TYPES, "env")


@dataclass
class Spec:
    name: str
    description: str
    measure: Description  # what every configuration measures, before its factors' levels
    factors: dict[str, list]  # factor name (env.NAME for variables) -> levels, in file order
    mode: str = "matrix"
    zip_groups: list[list[str]] = field(default_factory=list)
    exclude: list[dict[str, list]] = field(default_factory=list)
    launches: int | None = None  # launches of each configuration's run; None: --launches' default (auto)
    source: str = ""  # the file's text, stored with the sweep


@dataclass(frozen=True)
class Configuration:
    """One point of the factor space: every factor's level (including ones with a single level)."""
    index: int
    factors: dict

    @property
    def id(self) -> str:
        return f"c{self.index:03d}"

    def label(self, names: list[str]) -> str:
        return ", ".join(f"{n}={show_level(self.factors[n])}" for n in names if n in self.factors)


def show_level(v: Any) -> str:
    if isinstance(v, (tuple, list)):
        return shlex.join(v) if v else "''"
    return str(v)


def _levels(value: Any, path: str, conv: Callable[[Any], Any]) -> list:
    """A scalar is one level, a list is the levels (a level of hosts or arguments may itself be a list)."""
    if not isinstance(value, list):
        return [conv(value)]
    if not value:
        raise UsageError(f"{path}: no levels: give one value or a non-empty list")
    levels = []
    for i, x in enumerate(value):
        try:
            levels.append(conv(x))
        except UsageError as e:  # point at the level: factors.ranks[1]
            raise UsageError(str(e).replace(path, f"{path}[{i}]", 1)) from None
    if len(set(map(repr, levels))) != len(levels):
        raise UsageError(f"{path}: a level appears twice: {value!r}")
    return levels


def _env_level(var: str) -> Callable[[Any], str]:
    return lambda v: parse_field("env", {var: v}, Front("spec", "factors"))[var]


def _parse_factors(table: Any) -> dict[str, list]:
    if not isinstance(table, dict):
        raise UsageError("factors: expected a table such as [factors] with ranks = [2, 4]")
    out: dict[str, list] = {}
    for key, value in table.items():
        path = f"factors.{key}"
        if key == "env":
            if not isinstance(value, dict):
                raise UsageError("factors.env: expected a table of variables, e.g. [factors.env] "
                                 "MPIR_CVAR_CH4_EAGER_MAX_MSG_SIZE = [\"1024\", \"65536\"]")
            for var, levels in value.items():
                if not var.replace("_", "a").isalnum() or var[0].isdigit():
                    raise UsageError(f"factors.env.{var}: not a valid environment variable name")
                out[f"env.{var}"] = _levels(levels, f"factors.env.{var}", _env_level(var))
            continue
        if key not in FACTOR_TYPES:
            raise _unknown("factors", key, FACTOR_KEYS)
        out[key] = _levels(value, path, FACTOR_TYPES[key](path))
    return out


# Every field of the description but launches (a top-level key) can be fixed under [measure].
MEASURE_KEYS = tuple(k for k in SPEC_KEYS if k != "launches")


def _parse_measure(table: Any) -> Description:
    if not isinstance(table, dict):
        raise UsageError("measure: expected a table, e.g. [measure] with benchmarks = [\"pingpong\"]")
    _check_keys(table, "measure", MEASURE_KEYS)
    return describe({SPEC_KEYS[k]: v for k, v in table.items()}, SPEC)


def _parse_combine(table: Any, factors: dict[str, list]) -> tuple[str, list[list[str]]]:
    if not isinstance(table, dict):
        raise UsageError("combine: expected a table, e.g. [combine] with mode = \"matrix\"")
    _check_keys(table, "combine", COMBINE_KEYS)
    mode = table.get("mode", "matrix")
    if mode not in ("matrix", "zip"):
        raise UsageError(f"combine.mode: unknown mode {mode!r}: {_hint(str(mode), ['matrix', 'zip'])}use "
                         f"\"matrix\" (every combination) or \"zip\" (all factors in lockstep)")
    groups = table.get("zip", [])
    if not isinstance(groups, list) or not all(isinstance(g, list) and all(isinstance(x, str) for x in g)
                                               for g in groups):
        raise UsageError(f"combine.zip: expected a list of groups of factor names, e.g. "
                         f"[[\"mpi\", \"launcher_args\"]], got {groups!r}")
    seen: set[str] = set()
    for i, group in enumerate(groups):
        if len(group) < 2:
            raise UsageError(f"combine.zip[{i}]: a zip group needs at least two factors, got {group!r}")
        for name in group:
            if name not in factors:
                raise UsageError(f"combine.zip[{i}]: '{name}' is not a factor of this spec: "
                                 f"{_hint(name, factors, 0.5)}factors: {', '.join(factors)}")
            if name in seen:
                raise UsageError(f"combine.zip[{i}]: '{name}' is in two zip groups; a factor zips with one group")
            seen.add(name)
        counts = {n: len(factors[n]) for n in group}
        if len(set(counts.values())) > 1:
            raise UsageError(f"combine.zip[{i}]: zipped factors need the same number of levels, got "
                             + ", ".join(f"{n}: {c}" for n, c in counts.items()))
    if mode == "zip":
        if groups:
            raise UsageError("combine.zip: with mode = \"zip\" every factor is zipped already; drop the groups "
                             "or use mode = \"matrix\"")
        counts = {n: len(v) for n, v in factors.items() if len(v) > 1}
        if len(set(counts.values())) > 1:
            raise UsageError("combine.mode: \"zip\" needs every factor with several levels to have the same "
                             "number of them, got " + ", ".join(f"factors.{n}: {c}" for n, c in counts.items()))
    return mode, groups


def _parse_exclude(items: Any, factors: dict[str, list]) -> list[dict[str, list]]:
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        raise UsageError("exclude: expected [[exclude]] tables, e.g. [[exclude]] mpi = \"openmpi\" ranks = 4")
    out = []
    for i, item in enumerate(items):
        path = f"exclude[{i}]"
        if not isinstance(item, dict) or not item:
            raise UsageError(f"{path}: expected a table of factor = level(s)")
        flat = dict(item)
        env = flat.pop("env", None)
        if env is not None:
            if not isinstance(env, dict):
                raise UsageError(f"{path}.env: expected a table of variables")
            flat.update({f"env.{k}": v for k, v in env.items()})
        rule: dict[str, list] = {}
        for name, value in flat.items():
            if name not in factors:
                raise UsageError(f"{path}.{name}: not a factor of this spec: {_hint(name, factors, 0.5)}"
                                 f"factors: {', '.join(factors)}")
            conv = _string(f"{path}.{name}") if name.startswith("env.") else FACTOR_TYPES[name](f"{path}.{name}")
            levels = _levels(value, f"{path}.{name}", conv)
            for lv in levels:
                if lv not in factors[name]:
                    raise UsageError(f"{path}.{name}: {show_level(lv)!r} is not a level of factors.{name} "
                                     f"({', '.join(repr(show_level(x)) for x in factors[name])})")
            rule[name] = levels
        out.append(rule)
    return out


def parse_spec(text: str, name: str = "experiment") -> Spec:
    """A checked spec from TOML text; `name` is used when the file gives none."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"the spec is not valid TOML: {e}") from e
    except RecursionError:  # tomllib recurses once per level of arrays and inline tables
        raise UsageError("the spec nests arrays or inline tables thousands of levels deep, which no spec "
                         "needs: write each factor's levels as one flat list") from None
    _check_keys(data, "", TOP_KEYS)
    spec_name = _string("name")(data.get("name", name))
    if not spec_name or any(c in spec_name for c in "/\\\0") or spec_name.startswith("."):
        raise UsageError(f"name: {spec_name!r} cannot name a directory: use letters, digits, - and _")
    measure = _parse_measure(data.get("measure", {}))
    factors = _parse_factors(data.get("factors", {}))
    if "ranks" not in factors and "nodes" in factors and "ranks_per_node" not in factors:
        raise UsageError("factors.nodes: give ranks or ranks_per_node too, so the rank count is known")
    mode, groups = _parse_combine(data.get("combine", {}), factors)
    launches = _launches(data.get("launches"))
    exclude = _parse_exclude(data.get("exclude", []), factors)
    return Spec(name=spec_name, description=_string("description")(data.get("description", "")),
                measure=measure, factors=factors, mode=mode, zip_groups=groups, exclude=exclude,
                launches=launches, source=text)


def _launches(value: Any) -> int | None:
    """launches = N or "auto" (absent: the default of --launches)."""
    if value is None:
        return None
    return parse_field("launches", value, Front("spec"))


def load_spec(path: Path) -> Spec:
    try:
        text = bounded.read_text(path, MAX_SPEC_BYTES, "a spec")
    except OSError as e:
        raise UsageError(f"cannot read the spec {path}: {bounded.why(e)}: give the path of a TOML file") from e
    except UnicodeDecodeError as e:
        raise UsageError(f"{path} is not UTF-8 text (byte {e.start}): a spec is a TOML file in UTF-8") from e
    if not text.strip() or all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        raise UsageError(f"{path} is empty: a spec names at least what to measure ([sweep] name, [measure] "
                         f"benchmarks; docs/experiments.md)")
    try:
        return parse_spec(text, Path(path).stem)
    except UsageError as e:
        raise UsageError(f"{path}: {e}") from e


def _excluded(factors: dict, rules: list[dict[str, list]]) -> bool:
    return any(all(factors[n] in levels for n, levels in rule.items()) for rule in rules)


MAX_CONFIGURATIONS = 10_000  # planned in a few seconds; a larger sweep is asked for with --max-configs


def configuration_count(spec: Spec) -> int:
    """How many configurations `expand` makes before exclusions, counted without making them."""
    groups = [list(spec.factors)] if spec.mode == "zip" else spec.zip_groups
    zipped = {n for g in groups for n in g}
    count = math.prod(len(levels) for n, levels in spec.factors.items() if n not in zipped)
    return count * math.prod(max(len(spec.factors[n]) for n in g) for g in groups if g)


def expand(spec: Spec, limit: int = MAX_CONFIGURATIONS) -> list[Configuration]:
    """Every configuration, in a stable order (the first factor varies slowest); zipped factors move
    together; excluded combinations are dropped. More than `limit` are refused before any is made."""
    count = configuration_count(spec)
    if count > limit:
        raise UsageError(f"the spec's factors make {count:,} configurations, more than the limit of {limit:,}: "
                         f"use fewer levels, or raise the limit with --max-configs {count}")
    names = list(spec.factors)
    groups = [names] if spec.mode == "zip" else spec.zip_groups
    axes: list[list[dict]] = []
    for name in names:
        group = next((g for g in groups if name in g), None)
        if group is None:
            axes.append([{name: lv} for lv in spec.factors[name]])
        elif name == group[0]:
            # a factor with one level is broadcast along the zipped ones
            width = max(len(spec.factors[n]) for n in group)
            axes.append([{n: spec.factors[n][i if len(spec.factors[n]) > 1 else 0] for n in group}
                         for i in range(width)])
    configs = []
    for combo in itertools.product(*axes):
        merged = {n: level for part in combo for n, level in part.items()}
        factors = {n: merged[n] for n in names}
        if not _excluded(factors, spec.exclude):
            configs.append(Configuration(len(configs) + 1, factors))
    if not configs:
        raise UsageError("every configuration is excluded: loosen the [[exclude]] tables")
    return configs


def varying(configs: list[Configuration]) -> list[str]:
    """The factors whose level differs between configurations: what labels them apart."""
    if not configs:
        return []
    names = list(configs[0].factors)
    return [n for n in names if len({repr(c.factors.get(n)) for c in configs}) > 1]


def json_factors(factors: dict) -> dict:
    """Factors as stored with each run: argv and host tuples become shell-quoted strings."""
    return {n: (",".join(v) if n == "hosts" else show_level(v)) if isinstance(v, tuple) else v
            for n, v in factors.items()}
