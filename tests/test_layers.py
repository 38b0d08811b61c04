"""The package's layers point one way (docs/architecture.md): cli -> commands -> the session ->
execute, store, analysis -> report. Read from the code's own imports, those inside functions
included, so a late import cannot hide a circle."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mpiscope"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(("mpiscope",) + parts).removesuffix(".__init__")


def imports() -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports."""
    found: dict[str, set[str]] = {}
    for f in PACKAGE.rglob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mpiscope"):
                deps.add(node.module)
                deps.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("mpiscope"))
        found[module_name(f)] = deps
    return {m: {d for d in ds if d in found and d != m} for m, ds in found.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> list[str] | None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if not state.get(d):
                cycle = visit(d, path + [d])
                if cycle:
                    return cycle
        state[m] = 2
        return None

    for m in sorted(graph):
        if not state.get(m):
            cycle = visit(m, [m])
            if cycle:
                return cycle
    return None


def test_no_import_cycle_inside_the_package():
    cycle = find_cycle(imports())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("lower, upper", [
    ("mpiscope.", "mpiscope.cli"),              # nothing imports the command-line layer
    ("mpiscope.report", "mpiscope.studies"),     # report draws any run, not one study's
    ("mpiscope.report", "mpiscope.commands"),
    ("mpiscope.report", "mpiscope.execute.session"),
    ("mpiscope.analysis", "mpiscope.report"),
    ("mpiscope.analysis", "mpiscope.commands"),
    ("mpiscope.analysis", "mpiscope.store.runs"),
    ("mpiscope.records", "mpiscope.store.runs"),
    ("mpiscope.execute.part", "mpiscope.execute.session"),
    ("mpiscope.store.runs", "mpiscope.execute.part"),
    ("mpiscope.execute.session", "mpiscope.commands"),
    ("mpiscope.execute.session", "mpiscope.execute.refine"),
    ("mpiscope.execute.session", "mpiscope.studies"),
    ("mpiscope.execute.session", "mpiscope.execute.sweep"),
    ("mpiscope.studies", "mpiscope.commands"),
    ("mpiscope.execute.part", "mpiscope.report"),
    ("mpiscope.plan.engine", "mpiscope.store.runs"),
    ("mpiscope.plan.engine", "mpiscope.execute.part"),
    ("mpiscope.records", "mpiscope.plan.engine"),
    ("mpiscope.util.typed", "mpiscope.records"),
    ("mpiscope.util.typed", "mpiscope.store.runs"),
    ("mpiscope.api", "mpiscope.commands"),       # the commands are layered on the API, not it on them
    ("mpiscope.execute.session", "mpiscope.api"),
    ("mpiscope.report", "mpiscope.api"),
    ("mpiscope.analysis", "mpiscope.api"),
    ("mpiscope.plan.describe", "mpiscope.execute.session"),   # the description is data: planner.py plans it
    ("mpiscope.plan.describe", "mpiscope.execute.planner"),
    ("mpiscope.plan.repetition", "mpiscope.plan.schedule"),
    ("mpiscope.execute.session", "mpiscope.execute.planner"),
    # the stage folders (docs/architecture.md): describing and planning, storing, reading records,
    # results and analysis come before measuring and never call it; utilities import no stage
    *(("mpiscope." + lower, "mpiscope.execute") for lower in ("plan", "store", "records", "results", "analysis",
                                                             "launchers", "mpi", "importers")),
    *(("mpiscope." + lower, "mpiscope.report") for lower in ("records", "results", "plan", "store")),
    ("mpiscope.results", "mpiscope.plan"),
    *(("mpiscope.util", "mpiscope." + stage) for stage in ("records", "results", "analysis", "store", "plan",
                                                           "launchers", "mpi", "execute", "report", "importers",
                                                           "studies", "doctor", "api", "commands")),
])
def test_layers_point_one_way(lower, upper):
    wrong = sorted(f"{m} imports {d}" for m, ds in imports().items()
                   if m.startswith(lower) and m not in (upper, "mpiscope.__main__")
                   for d in ds if d == upper or d.startswith(upper + "."))
    assert not wrong, wrong


def test_analysis_returns_values_and_never_prints():
    for f in (PACKAGE / "analysis").rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "print", f"{f.name} prints"
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("rich"), f"{f.name} imports {node.module}"
