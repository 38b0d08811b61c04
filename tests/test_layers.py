"""The package's layers point one way (docs/architecture.md): cli -> commands -> api -> execute
-> report -> store -> plan -> analysis -> ... -> records -> util. Read from the code's own
imports, those inside functions and relative ones included, so a late import cannot hide a
circle; between modules and between the stage folders. Also what the tree tracks: no stray
binary, no link out of it, no path of one machine, no text cited that its reader lacks."""
from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "mpiscope"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(("mpiscope",) + parts).removesuffix(".__init__")


def imported(node: ast.AST, package: str) -> list[str]:
    """The modules an import statement names (`package`: the one a relative import starts from),
    each `from M import x` also as M.x, which is a module when x is one."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = package.split(".")[:len(package.split(".")) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return [module, *(f"{module}.{a.name}" for a in node.names)]


@functools.cache
def imports() -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports (read once a session: the
    sixty tests below share it and none changes it)."""
    found: dict[str, set[str]] = {}
    for f in PACKAGE.rglob("*.py"):
        name = module_name(f)
        package = name if f.name == "__init__.py" else name.rpartition(".")[0]
        found[name] = {m for node in ast.walk(ast.parse(f.read_text())) for m in imported(node, package)}
    return {m: {d for d in ds if d in found and d != m} for m, ds in found.items()}


def stage(module: str) -> str | None:
    """The stage folder (or top module: api, cli) a module belongs to; None for the package's root."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    return "cli" if parts[1] == "__main__" else parts[1]


def stages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph seen between stage folders: an arrow where any module of one imports a
    module of the other."""
    out: dict[str, set[str]] = {}
    for m, ds in graph.items():
        a = stage(m)
        if a is not None:
            out.setdefault(a, set()).update(b for b in map(stage, ds) if b is not None and b != a)
    for ds in list(out.values()):
        for b in ds:
            out.setdefault(b, set())
    return out


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


def test_no_circle_between_the_stage_folders():
    graph = imports()
    cycle = find_cycle(stages(graph))
    if cycle:
        arrows = [f"{m} imports {d}" for a, b in zip(cycle, cycle[1:]) for m, ds in sorted(graph.items())
                  for d in sorted(ds) if stage(m) == a and stage(d) == b]
        pytest.fail("the stage folders import each other in a circle: " + " -> ".join(cycle) + "\n"
                    + "\n".join(arrows))


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    # no circle between modules, one between their folders
    modules = {"mpiscope.a.x": {"mpiscope.b.y"}, "mpiscope.b.y": set(), "mpiscope.b.z": {"mpiscope.a.w"},
               "mpiscope.a.w": set(), "mpiscope.cli": {"mpiscope.a.x"}, "mpiscope.__main__": {"mpiscope.cli"}}
    assert find_cycle(modules) is None
    assert stages(modules) == {"a": {"b"}, "b": {"a"}, "cli": {"a"}}
    assert find_cycle(stages(modules)) == ["a", "b", "a"]


def test_imports_are_read_inside_functions_and_relative():
    source = "def f():\n    from .measured import select\n    import mpiscope.records.model\n"
    names = {m for node in ast.walk(ast.parse(source)) for m in imported(node, "mpiscope.analysis")}
    assert {"mpiscope.analysis.measured", "mpiscope.analysis.measured.select", "mpiscope.records.model"} <= names
    node = ast.parse("from .. import records").body[0]
    assert imported(node, "mpiscope.analysis") == ["mpiscope", "mpiscope.records"]


def drawn_order() -> list[str]:
    """The folders (and top modules) as docs/architecture.md draws them, top to bottom."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    drawing = text.split("```", 2)[1]
    return [m.group(1) for m in re.finditer(r"^ (\w+)/?(?:\s|$)", drawing, re.M)]


def test_folders_import_only_the_folders_drawn_below_them():
    order = drawn_order()
    graph = stages(imports())
    assert sorted(order) == sorted(graph), "docs/architecture.md draws each stage folder once"
    up = sorted(f"{a} -> {b}" for a, ds in graph.items() for b in ds if order.index(b) < order.index(a))
    assert not up, f"arrows pointing up the drawing of docs/architecture.md: {up}"


@pytest.mark.parametrize("lower, upper", [
    ("mpiscope.", "mpiscope.cli"),              # nothing imports the command-line layer
    ("mpiscope.report", "mpiscope.studies"),     # report draws any run, not one study's
    ("mpiscope.report", "mpiscope.commands"),
    ("mpiscope.report", "mpiscope.execute"),
    ("mpiscope.analysis", "mpiscope.report"),
    ("mpiscope.analysis", "mpiscope.commands"),
    ("mpiscope.analysis", "mpiscope.store"),
    ("mpiscope.records", "mpiscope.store"),
    ("mpiscope.execute.part", "mpiscope.execute.session"),
    ("mpiscope.store", "mpiscope.execute"),
    ("mpiscope.execute.session", "mpiscope.commands"),
    ("mpiscope.execute.session", "mpiscope.execute.refine"),
    ("mpiscope.execute.session", "mpiscope.studies"),
    ("mpiscope.execute.session", "mpiscope.execute.sweep"),
    ("mpiscope.studies", "mpiscope.commands"),
    ("mpiscope.execute.part", "mpiscope.report"),
    ("mpiscope.plan", "mpiscope.store"),
    ("mpiscope.plan.engine", "mpiscope.execute.part"),
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
    ("mpiscope.doctor", "mpiscope.execute"),     # the checks judge facts; execute.probe gathers them
    ("mpiscope.launchers", "mpiscope.mpi"),      # an adapter reads a library through a protocol
    # the stage folders (docs/architecture.md): describing and planning, storing, reading records,
    # results and analysis come before measuring and never call it; the results layer is pure
    # over records and policy; utilities import no stage
    *(("mpiscope." + lower, "mpiscope.execute") for lower in ("plan", "store", "records", "results", "analysis",
                                                             "launchers", "mpi", "importers", "doctor")),
    *(("mpiscope." + lower, "mpiscope.report") for lower in ("records", "results", "plan", "store")),
    *(("mpiscope.results", "mpiscope." + upper) for upper in ("plan", "store", "analysis", "mpi", "launchers")),
    *(("mpiscope.records", "mpiscope." + upper) for upper in ("results", "analysis", "plan")),
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


# Three words or more in the literal text of an f-string: a phrase a reader is meant to read.
PHRASE = re.compile(r"[A-Za-z']+(?: [A-Za-z']+){2,}")


def sentences(source: str) -> list[tuple[int, str]]:
    """The f-strings of `source` whose own text holds a phrase (line, that text), except in a
    `raise`: a refusal's one-line message is the error's, not a figure's words. Labels (column
    names, units, SimGrid's `key:value` options) have no phrase; a sentence written as a plain
    literal is not told from a label here, so it is left to review."""
    tree = ast.parse(source)
    raised = {id(n) for r in ast.walk(tree) if isinstance(r, ast.Raise) for n in ast.walk(r)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) not in raised:
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if PHRASE.search(text):
                found.append((node.lineno, text))
    return found


def test_analysis_builds_no_sentence():
    """Analysis returns values (a kind and its figures: `hockney.Issue`, the twin's validation
    `Reason`); report/ says them in words (docs/architecture.md)."""
    built = [f"{f.relative_to(PACKAGE)}:{line}: {text!r}" for f in sorted((PACKAGE / "analysis").rglob("*.py"))
             for line, text in sentences(f.read_text())]
    assert not built, "analysis builds text for a reader (say it in report/):\n" + "\n".join(built)


def test_the_sentence_finder_finds_one():
    source = ('def why(n):\n'
              '    if n < 0:\n'
              '        raise ValueError(f"a size of {n} bytes cannot be")\n'
              '    label = f"{n}:bw-factor"\n'
              '    return f"the measurement itself spans +-{n:.0%}"\n')
    assert sentences(source) == [(5, "the measurement itself spans +-")]


# --- facades --------------------------------------------------------------------------------

def test_package_facades_import_no_submodule():
    """A package's __init__ names what its modules give (util.lazy) but imports none of them, so
    importing one small module does not load its siblings."""
    graph = imports()
    eager = sorted(f"{m} imports {d}" for m, ds in graph.items() if (PACKAGE / m.replace(".", "/")[9:]).is_dir()
                   for d in ds if d.startswith(m + ".") and d != "mpiscope.util.lazy")
    assert not eager, eager


def loaded_by(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize("module", ["mpiscope.analysis.checks", "mpiscope.records.model", "mpiscope.cli",
                                    "mpiscope.launchers.base", "mpiscope.doctor.placement"])
def test_a_small_module_loads_no_numerical_library(module):
    heavy = {"numpy", "scipy", "pandas", "matplotlib"} & loaded_by(module)
    assert not heavy, f"import {module} loads {sorted(heavy)}"


def test_a_name_of_a_facade_loads_its_module_only():
    loaded = loaded_by("mpiscope.records; from mpiscope.launchers import Job; from mpiscope.records import Point")
    assert {"mpiscope.records.model", "mpiscope.launchers.base"} <= loaded
    assert not {"mpiscope.launchers.choose", "mpiscope.launchers.srun", "mpiscope.records.measured"} & loaded


# --- what the tree tracks -------------------------------------------------------------------

def tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / p for p in out.decode().split("\0") if p]


def in_git() -> bool:
    return subprocess.run(["git", "rev-parse"], cwd=ROOT, capture_output=True).returncode == 0


needs_git = pytest.mark.skipif(not in_git(), reason="not a git checkout")

# Magic numbers of compiled files: ELF objects and programs, Mach-O, PE, Python bytecode, archives.
BINARY = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"MZ", b"!<arch>\n")
# A path of one machine: its working tree, a user's home, root's home, a temporary directory.
# /home/<user>/ and /home/me/ are the docs' stand-ins for anyone's home (a batch script needs one).
MACHINE_PATH = re.compile(r"(?<![\w./-])(/work/|/root/|/home/(?!<|me\b)\w|/Users/\w|/tmp/[\w.-]+/)")
# Where such a path is not one machine's: records measured on one (tests/data, tests/doctor_facts:
# their argv and hosts are what that machine said, kept as data), and the tests that name the
# paths they refuse (this file, tests/test_readme.py).
RECORDED = ("tests/data/", "tests/doctor_facts/", "tests/test_layers.py", "tests/test_readme.py")


@needs_git
def test_no_compiled_file_is_tracked():
    found = [str(p.relative_to(ROOT)) for p in tracked() if p.is_file() and not p.is_symlink()
             and (p.suffix in (".o", ".so", ".a", ".pyc") or p.open("rb").read(8).startswith(BINARY))]
    assert not found, f"compiled files tracked: {found}"


@needs_git
def test_no_tracked_link_leaves_the_tree():
    out = []
    for p in tracked():
        if p.is_symlink():
            target = (p.parent / p.readlink()).resolve()
            if not target.is_relative_to(ROOT):
                out.append(f"{p.relative_to(ROOT)} -> {p.readlink()}")
    assert not out, f"links out of the tree: {out}"


# What a reader of the tree does not have: the files beside the development checkout and the texts
# the experiments were first taken from (a comment or docstring describes the experiment itself).
ELSEWHERE = re.compile(r"\.\./shared/|shared/(?:reference|samples)/|\bthe (?:chapter|newsletter|exercise)\b"
                       r"|\b(?:chapter|exercise)'s\b", re.I)


def tracked_lines(pattern: re.Pattern[str]) -> list[str]:
    """`file:line: match` for every line of a tracked text file (outside RECORDED) that matches."""
    found = []
    for p in tracked():
        rel = str(p.relative_to(ROOT))
        if rel.startswith(RECORDED) or p.is_symlink() or not p.is_file():
            continue
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        found += [f"{rel}:{n}: {m.group(0)}" for n, line in enumerate(text.splitlines(), 1)
                  for m in [pattern.search(line)] if m]
    return found


@needs_git
def test_no_path_of_one_machine_is_tracked():
    found = tracked_lines(MACHINE_PATH)
    assert not found, "paths of one machine:\n" + "\n".join(found)


@needs_git
def test_no_tracked_file_cites_what_its_reader_lacks():
    found = tracked_lines(ELSEWHERE)
    assert not found, "describe the experiment itself; cite nothing a reader does not have:\n" + "\n".join(found)


def test_the_machine_path_pattern():
    for line in ("see /work/main/src", "cd /root/x", "/home/alice/mpi", "in /tmp/abc123/run"):
        assert MACHINE_PATH.search(line), line
    for line in ("/home/<user>/mpi", "/home/me/runs", "--chdir=/home/me", "https://example.org/work/x",
                 "src/work/x", "under /tmp, a temporary file"):
        assert not MACHINE_PATH.search(line), line


def test_the_citation_pattern():
    for line in ("copied from ../shared/samples/", "see shared/reference/ring.f90", "as the chapter's x(:,1..3)",
                 "The exercise asks", "the newsletter's figure"):
        assert ELSEWHERE.search(line), line
    for line in ("smpi/shared-malloc", "shared/ memory", "a chapter of docs/models.md", "exercises the reader"):
        assert not ELSEWHERE.search(line), line


def test_a_measurement_is_built_by_the_planner_only():
    """One step from a description to a Measurement (execute/planner.py): run, sweeps, studies and
    tune (execute/tune.py, execute/liveness.py) plan their launches there, none builds its own."""
    built = {str(f.relative_to(PACKAGE)) for f in PACKAGE.rglob("*.py")
             for n in ast.walk(ast.parse(f.read_text()))
             if isinstance(n, ast.Call) and "Measurement" in (getattr(n.func, "id", None), getattr(n.func, "attr", None))}
    assert built == {"execute/planner.py"}, built
    assert (PACKAGE / "execute" / "tune.py").is_file()  # the scan covers tune, where it was built twice
