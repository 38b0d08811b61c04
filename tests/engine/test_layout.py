"""The engine's files depend on each other one way (docs/engine.md, "The engine's files"). A
module is foo.c with foo.h; it depends on another when it includes that one's header or names a
function defined in that one's .c (a call, or a function stored in a table): a call that skips
the headers, or one through a header another file implements (reporter.h), still counts."""
from __future__ import annotations

import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from mpiscope_test_fixtures.engine import ENGINE_SRC

SRC = ENGINE_SRC / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A function other files can call: at the start of a line, not static, its parameters then a brace.
DEFINITION = re.compile(r"^(?!static\b)(?:[A-Za-z_]\w*[ \t*]+)+([A-Za-z_]\w*)\([^;{]*\)\s*\{", re.M)
COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\])*"', re.S)


def module(path: Path, src: Path) -> str:
    return path.resolve().relative_to(src.resolve()).with_suffix("").as_posix()


def code(path: Path) -> str:
    return COMMENT_OR_STRING.sub(" ", path.read_text())


def dependencies(src: Path = SRC) -> dict[str, set[str]]:
    """Each module of src and the modules it depends on (includes or calls into)."""
    files = sorted(src.rglob("*.[ch]"))
    modules = {module(f, src) for f in files}
    owner = {name: module(f, src) for f in files if f.suffix == ".c"
             for name in DEFINITION.findall(f.read_text())}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for f in files:
        text = f.read_text()
        for name in INCLUDE.findall(text):
            header = next((p for p in (f.parent / name, src / name) if p.exists()), None)
            if header is not None:
                graph[module(f, src)].add(module(header, src))
        if f.suffix == ".c":  # a header's prototypes declare, a .c file's names use
            graph[module(f, src)].update(owner[w] for w in set(re.findall(r"\b\w+\b", code(f))) if w in owner)
    return {m: deps - {m} for m, deps in graph.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as e:
        return list(reversed(e.args[1]))  # graphlib lists it against the arrows
    return None


def test_the_engine_has_no_circle():
    cycle = find_cycle(dependencies())
    assert cycle is None, "engine files in a circle: " + " -> ".join(cycle)


def test_the_finder_sees_calls_and_circles(tmp_path: Path):
    toy = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    cycle = find_cycle(toy)
    assert cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}
    assert all(later in toy[m] for m, later in zip(cycle, cycle[1:]))  # along the arrows
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    # a call with no include between them is a dependency all the same
    (tmp_path / "a.h").write_text("int a_call(void);\n")
    (tmp_path / "a.c").write_text('#include "a.h"\nint a_call(void)\n{\n    return b_call();\n}\n')
    (tmp_path / "b.c").write_text("static int helper(void)\n{\n    return 1;\n}\n"
                                  "int b_call(void)\n{\n    /* a_call( in a comment */\n    return helper();\n}\n"
                                  "int b_one(void) { return 1; }\n")
    assert dependencies(tmp_path) == {"a": {"b"}, "b": set()}
    (tmp_path / "c.c").write_text("int b_one(void);\nint c_call(void)\n{\n    return b_one();\n}\n")
    assert dependencies(tmp_path)["c"] == {"b"}
    (tmp_path / "b.c").write_text('#include "a.h"\nint b_call(void)\n{\n    return a_call();\n}\n')
    assert find_cycle(dependencies(tmp_path)) is not None


def test_the_finder_reads_the_engine():
    graph = dependencies()
    assert {"main", "kernels/coll", "timing"} <= graph.keys()
    assert "json" in graph["kernels/coll"] and "bench" in graph["timing"]
    assert "records" in graph["main"]  # through reporter.h, which records.c implements
