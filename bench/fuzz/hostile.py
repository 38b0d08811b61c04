"""Issue 47's classes of hostile cases for bench/fuzz/run.py, each with its own check after the
command ends (run.py runs them, as every case, in a process of their own):

  injection  a command hidden in every path-like value that reaches make or a batch script:
             MPISCOPE_HOME, --runs-dir, the working directory's name, an MPI prefix (its mpicc).
             Each payload would create a canary file ($FUZZ_CANARY, set per case); a case whose
             canary exists afterwards had a command executed. A dry run's batch script is run
             too, by bash, as Slurm would run it. make builds a stand-in engine (a Makefile that
             takes MPICC and BUILD as the engine's does and copies the real engine): the same
             make command line, without a compile per case.
  writer     report -o, export -o, doctor --save-facts onto a FIFO (drained by the bench) and
             onto device nodes made in a temporary directory with os.mknod (never /dev's own):
             the node must still be the same node afterwards; a replaced one is "destroyed".
  duplicate  a point line repeated in its launch (once with times x10, once 2,000 times), the
             records file doubled, a run copied with cp -r and named beside the original: an exit
             0 that says nothing about it (no "duplicate", "copy", "twice", "once") is silent.
  reader     every file mpiscope reads that a user can name or damage (tune --show, tune
             --resume's state.json, sweep specs, import, doctor --facts, batch-run, --hostfile,
             mpis.json) as a FIFO, a device node, nesting 100,000 deep, binary bytes, 300 MB
             (sparse) and a directory: exit 0 is a hostile file taken as a good one (silent).
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

# Each payload runs `touch "$FUZZ_CANARY"` wherever it is expanded: by make ($(shell ...)), by a
# shell running a recipe or a batch script (command substitution, a separator, a line break).
# No payload holds a '/': each must fit in one directory name.
PAYLOADS = ["$(shell touch $${FUZZ_CANARY})", "$(shell touch ${FUZZ_CANARY})", "$(touch ${FUZZ_CANARY})",
            "`touch ${FUZZ_CANARY}`", ";touch ${FUZZ_CANARY};", "'; touch ${FUZZ_CANARY}; '",
            '"; touch ${FUZZ_CANARY}; "', "\ntouch ${FUZZ_CANARY}\n", "\r\ntouch ${FUZZ_CANARY}\n#",
            "&& touch ${FUZZ_CANARY} &&", "| touch ${FUZZ_CANARY}", "$$(touch ${FUZZ_CANARY})",
            "x\n#SBATCH --wrap=touch\ntouch ${FUZZ_CANARY}", "$(eval $(shell touch $${FUZZ_CANARY}))",
            "${FUZZ_CANARY:+$(touch ${FUZZ_CANARY})}", "\\\ntouch ${FUZZ_CANARY}",
            # make's other ways to run or write, and a value that only looks like a variable
            "$(file >$(FUZZ_CANARY),x)", "$(shell touch $(FUZZ_CANARY))", "$(info $(shell touch $${FUZZ_CANARY}))",
            "$(call shell,touch $${FUZZ_CANARY})", "$(value $(shell touch $${FUZZ_CANARY}))",
            "x$(shell touch $${FUZZ_CANARY})y", "$(shell\ttouch $${FUZZ_CANARY})", "%$(shell touch $${FUZZ_CANARY})%",
            ":$(shell touch $${FUZZ_CANARY}):", "=$(shell touch $${FUZZ_CANARY})", "#$(shell touch $${FUZZ_CANARY})",
            "*$(shell touch $${FUZZ_CANARY})", "$(shell touch $${FUZZ_CANARY}) ", "\n\ttouch ${FUZZ_CANARY}\n",
            # a shell's other ways: redirections, process substitution, background, or-lists
            "$(> ${FUZZ_CANARY})", "> ${FUZZ_CANARY}", ">${FUZZ_CANARY}", "$(: >${FUZZ_CANARY})",
            "<(touch ${FUZZ_CANARY})", ">(touch ${FUZZ_CANARY})", "|| touch ${FUZZ_CANARY} ||",
            "& touch ${FUZZ_CANARY} &", " ; touch ${FUZZ_CANARY} # ", "\ttouch ${FUZZ_CANARY}",
            # line breaks that are not \n to a shell but may be to a reader, and quotes around them
            "x\u2028touch ${FUZZ_CANARY}\n", "x\x85touch ${FUZZ_CANARY}\n", "x\x0ctouch ${FUZZ_CANARY}\n",
            "x\x0btouch ${FUZZ_CANARY}\n", "\"\ntouch ${FUZZ_CANARY}\n\"", "'\ntouch ${FUZZ_CANARY}\n'",
            "\n#SBATCH --output=x\ntouch ${FUZZ_CANARY}", "x\r#SBATCH --wrap=x\rtouch ${FUZZ_CANARY}\r"]
DUPLICATE_WORDS = ("duplicate", "copy", "copies", "twice", "once", "repeated")
# Linux's memory devices that take writes harmlessly (never mem, kmem or port)
NODES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8), "urandom": (1, 9)}


@dataclass
class Hostile:
    """One case: its commands (run in turn while each exits 0), where and with what, and the
    check of what it left behind ("" when nothing is wrong)."""
    argvs: list[list[str]]
    kind: str                                      # injection | writer | duplicate | reader
    what: str                                      # the value or damage, for the table
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    canary: Path | None = None                     # injection: must not exist afterwards
    script: bool = False                           # run the dry run's batch script with bash
    check: Callable[["Outcome"], str] | None = None  # writer, duplicate: what went wrong, or ""
    exit0_ok: bool = False                         # reader: exit 0 is right (a file read past by design)


@dataclass
class Outcome:
    code: int | None                               # the last command's; None: hung
    stdout: str
    stderr: str


def mpiscope_env(case: Hostile) -> dict[str, str]:
    env = {**os.environ, **case.env}
    if case.canary is not None:
        env["FUZZ_CANARY"] = str(case.canary)
    return env


# -- injection ----------------------------------------------------------------------------------

def stand_in_engine(work: Path, engine: Path) -> Path:
    """Engine sources whose Makefile takes MPICC and BUILD as the engine's does, its recipes run
    by make's shell with both, and copies the real engine (no compile per case)."""
    src = work / "engine-src"
    (src / "src").mkdir(parents=True)
    (src / "src" / "stub.c").write_text("int main(void) { return 0; }\n")
    (src / "Makefile").write_text(
        "MPICC  ?= mpicc\nBUILD  ?= build\n\n"
        "$(BUILD)/mpiscope-engine: $(BUILD)/obj/stub.o\n"
        f"\t$(MPICC) -show > /dev/null && cp {engine} $@\n\n"
        "$(BUILD)/obj/%.o: src/%.c\n\t@mkdir -p $(dir $@)\n\t$(MPICC) -show > /dev/null && touch $@\n")
    return src


def prefix_of(where: Path, mpi_bin: Path) -> Path:
    """An MPI prefix at `where` whose bin/ wraps the real MPI's programs."""
    (where / "bin").mkdir(parents=True)
    for name in ("mpicc", "mpiexec", "mpichversion", "mpivars"):
        real = mpi_bin / name
        if real.exists():
            wrapper = where / "bin" / name
            wrapper.write_text(f"#!/bin/sh\nexec {real} \"$@\"\n")
            wrapper.chmod(0o755)
    return where


def injection_cases(work: Path, spec: Path, engine: Path, mpi_bin: Path) -> list[Hostile]:
    src = stand_in_engine(work, engine)
    built = {"MPISCOPE_ENGINE_SRC": str(src)}
    dry = ["-b", "pingpong", "-n", "2", "--sizes", "8", "--submit", "slurm", "--dry-run"]
    cases: list[Hostile] = []
    numbers = itertools.count()
    (work / "canaries").mkdir()
    for k, payload in enumerate(PAYLOADS):
        base = work / "inject" / f"p{k}"

        def case(value: str, argvs: list[list[str]], env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
            cases.append(Hostile(argvs, "injection", value, {**built, **(env or {})}, cwd,
                                 canary=work / "canaries" / f"c{next(numbers)}", script=True))

        runs = base / f"runs{payload}"
        case("--runs-dir", [["run", *dry, "--runs-dir", str(runs)]])
        case("--runs-dir", [["sweep", str(spec), "--submit", "slurm", "--dry-run", "--runs-dir", str(runs)]])
        cwd = base / f"cwd{payload}"
        cwd.mkdir(parents=True)
        case("working directory", [["run", *dry, "--runs-dir", "runs"]], cwd=cwd)
        case("working directory", [["sweep", str(spec), "--submit", "slurm", "--dry-run", "--runs-dir", "runs"]],
             cwd=cwd)
        home = base / f"home{payload}"
        case("MPISCOPE_HOME", [["run", *dry, "--runs-dir", str(base / "runs-h")]], {"MPISCOPE_HOME": str(home)})
        case("MPISCOPE_HOME", [["mpi", "list"]], {"MPISCOPE_HOME": str(home)})
        prefix = prefix_of(base / f"pfx{payload}", mpi_bin)
        plain = {"MPISCOPE_HOME": str(base / "home-m")}
        case("MPI prefix (MPICC)", [["mpi", "add", str(prefix), "--name", f"p{k}"],
                                    ["run", *dry, "--mpi", f"p{k}", "--runs-dir", str(base / "runs-m")]], plain)
        case("MPISCOPE_RUNS", [["run", *dry]], {"MPISCOPE_RUNS": str(runs)})
        named = base / f"spec{payload}.toml"
        named.write_text(spec.read_text())
        case("spec file's name", [["sweep", str(named), "--submit", "slurm", "--dry-run", "--runs-dir",
                                   str(base / "runs-s")]])
        titled = base / "titled.toml"  # the spec's own name: the job's name
        titled.write_text(spec.read_text().replace('name = "inject"', f"name = {json.dumps(payload)}"))
        case("spec's name", [["sweep", str(titled), "--submit", "slurm", "--dry-run", "--runs-dir",
                              str(base / "runs-t")]])
        hosts = base / f"hosts{payload}"
        hosts.write_text("localhost\n")
        case("--hostfile", [["run", *dry, "--hostfile", str(hosts), "--runs-dir", str(base / "runs-f")]])
        case("--sbatch-args", [["run", *dry, "--sbatch-args", f"--comment={payload}", "--runs-dir",
                                str(base / "runs-a")]])
    return cases


def run_script(case: Hostile, stdout: str, work: Path) -> None:
    """A dry run's batch script (printed on stdout) run by bash, as the job's shell would: its
    last line starts mpiscope batch-run, which finds no saved configuration and stops."""
    if "#!/bin/bash" not in stdout:
        return
    script = stdout[stdout.index("#!/bin/bash"):]
    where = work / "scripts"
    where.mkdir(exist_ok=True)
    try:
        subprocess.run(["bash", "-c", script], cwd=where, env=mpiscope_env(case), capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        pass


# -- writers ------------------------------------------------------------------------------------

class Drain:
    """The read end of a FIFO, held open and read to the end in a thread: a writer that writes
    into the FIFO neither blocks nor fills it."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.read = 0
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import select
        while not self.stop:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    got = len(os.read(self.fd, 1 << 16))
                except BlockingIOError:
                    got = 0
                self.read += got
                if not got:  # no writer yet (or any more): select says readable at once
                    time.sleep(0.05)

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        os.close(self.fd)


def node_check(path: Path, mode: int, rdev: int) -> Callable[[Outcome], str]:
    def check(_: Outcome) -> str:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return "destroyed: removed"
        if stat.S_IFMT(st.st_mode) != stat.S_IFMT(mode) or st.st_rdev != rdev:
            return f"destroyed: now {'a regular file' if stat.S_ISREG(st.st_mode) else oct(st.st_mode)}"
        return ""
    return check


def writer_targets(where: Path) -> list[tuple[str, Path]]:
    """A FIFO and device nodes (made here, never /dev's), and a link to one of them."""
    where.mkdir(parents=True)
    out = []
    os.mkfifo(where / "fifo")
    out.append(("FIFO", where / "fifo"))
    for name, (major, minor) in NODES.items():
        os.mknod(where / name, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        out.append((f"char device ({name})", where / name))
    os.symlink(where / "null", where / "link-to-null")
    out.append(("link to a char device", where / "link-to-null"))
    os.symlink(where / "fifo", where / "link-to-fifo")
    out.append(("link to a FIFO", where / "link-to-fifo"))
    os.symlink("zero", where / "relative-link-to-zero")
    os.symlink(where / "relative-link-to-zero", where / "link-to-link")
    out.append(("link to a link to a char device", where / "link-to-link"))
    return out


WRITERS = [["report", "{run}", "-o", "{target}"], ["export", "{run}", "-o", "{target}"],
           ["export", "{run}", "--format", "parquet", "-o", "{target}"],
           ["export", "{run}", "--per-launch", "-o", "{target}"],
           ["export", "{run}", "--format", "json", "-o", "{target}"],
           ["export", "{run}", "--format", "markdown", "-o", "{target}"],
           ["export", "{run}", "{run2}", "-o", "{target}"], ["report", "{run}", "{run2}", "-o", "{target}"],
           ["doctor", "--facts", "{facts}", "--save-facts", "{target}"]]


def writer_cases(work: Path, good: Path, other: Path, facts: Path) -> list[Hostile]:
    cases = []
    for k, writer in enumerate(WRITERS):
        for name, target in writer_targets(work / "writers" / f"w{k}"):
            st = os.lstat(target)
            argv = [a.format(run=good, run2=other, target=target, facts=facts) for a in writer]
            cases.append(Hostile([argv], "writer", name, check=node_check(target, st.st_mode, st.st_rdev)))
    return cases


def open_drains(case: Hostile) -> list[Drain]:
    """Drains for the FIFOs a writer case writes to (opened before the command starts)."""
    return [Drain(Path(a)) for argv in case.argvs for a in argv
            if os.path.exists(a) and stat.S_ISFIFO(os.stat(a).st_mode)] if case.kind == "writer" else []


# -- duplicates -----------------------------------------------------------------------------------

def said_something(out: Outcome) -> str:
    text = (out.stderr + out.stdout).lower()
    return "" if out.code != 0 or any(w in text for w in DUPLICATE_WORDS) else "silent: duplicates taken as data"


def duplicate_cases(work: Path, good: Path, other: Path) -> list[Hostile]:
    lines = (good / "records.jsonl").read_text().splitlines(keepends=True)
    points = [i for i, ln in enumerate(lines) if '"type": "point"' in ln]
    point, last = points[0], points[-1]

    def timed(i: int, factor: float) -> str:  # line i's point with its times scaled
        rec = json.loads(lines[i])
        rec["time_us"] = {k: v * factor if isinstance(v, float) else v for k, v in rec["time_us"].items()}
        return json.dumps(rec) + "\n"

    def reordered(i: int) -> str:  # the same point, its keys in another order and spaced otherwise
        return json.dumps(dict(reversed(json.loads(lines[i]).items())), indent=None, separators=(",", ":")) + "\n"
    shapes = {"a point twice, times x10": lines[:point + 1] + [timed(point, 10)] + lines[point + 1:],
              "a point twice, times /10": lines[:last + 1] + [timed(last, 0.1)] + lines[last + 1:],
              "a point 2,000 times": lines[:point + 1] + [lines[point]] * 2000 + lines[point + 1:],
              "a point again after the end record": lines + [lines[point]],
              "a point again, keys reordered": lines[:point + 1] + [reordered(point)] + lines[point + 1:],
              "every point twice in a row": [ln for ln in lines for ln in ([ln, ln] if '"type": "point"' in ln
                                                                            else [ln])],
              "records doubled": lines + lines, "records tripled": lines * 3}
    runs = []
    for k, (name, text) in enumerate(shapes.items()):
        d = work / "duplicates" / f"d{k}" / good.name
        shutil.copytree(good, d, ignore=shutil.ignore_patterns("owner.lock"))
        (d / "records.jsonl").write_text("".join(text))
        runs.append((name, [str(d)], [str(d)]))
    copies = []
    for k in range(2):
        copies.append(work / "duplicates" / "copied" / f"copy-{k}-of-run")
        shutil.copytree(good, copies[-1], ignore=shutil.ignore_patterns("owner.lock"))
    runs.append(("a run and its cp -r copy", [str(good), str(copies[0])], [f"{good},{copies[0]}"]))
    runs.append(("a run and two copies", [str(good), *map(str, copies)], [",".join(map(str, [good, *copies]))]))
    runs.append(("two copies of one run", list(map(str, copies)), [",".join(map(str, copies))]))
    cases = []
    out = work / "duplicates"
    for name, paths, pooled in runs:
        for argv in (["show", paths[-1]], ["table", *paths], ["table", *paths, "--per-launch"],
                     ["export", *paths, "--format", "csv"], ["export", *paths, "--per-launch"], ["model", *paths],
                     ["compare", *pooled, str(other)], ["report", *paths, "-o", str(out / "r.html")],
                     ["plot", *paths, "-o", str(out / "plots")]):
            cases.append(Hostile([argv], "duplicate", name, check=said_something))
    return cases


# -- readers --------------------------------------------------------------------------------------

def _deep(path: Path) -> None:
    path.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")


def _sparse(path: Path) -> None:
    with open(path, "wb") as f:
        f.truncate(300 << 20)


def _node(minor: int) -> Callable[[Path], None]:
    return lambda p: os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, minor))


def _link(make: Callable[[Path], None]) -> Callable[[Path], None]:
    """A link to what `make` makes."""
    def link(p: Path) -> None:
        make(p.with_name(p.name + ".target"))
        os.symlink(p.name + ".target", p)
    return link


DAMAGE: dict[str, Callable[[Path], None]] = {
    "FIFO": os.mkfifo, "char device (zero)": _node(5), "char device (urandom)": _node(9),
    "char device (null)": _node(3), "char device (full)": _node(7), "link to a FIFO": _link(os.mkfifo),
    "link to a char device (zero)": _link(_node(5)), "a dangling link": lambda p: os.symlink(p.name + ".gone", p),
    "a link to itself": lambda p: os.symlink(p.name, p),
    "nested 100,000 deep": _deep, "nested 65 deep": lambda p: p.write_text("[" * 65 + "]" * 65),
    "binary bytes": lambda p: p.write_bytes(bytes(range(256)) * 64),
    "NUL bytes": lambda p: p.write_bytes(bytes(4096)), "not UTF-8": lambda p: p.write_bytes(b"name = \"\xff\xfe\"\n"),
    "UTF-16": lambda p: p.write_text('{"name": "x"}\n', encoding="utf-16"),
    "empty": lambda p: p.write_bytes(b""), "one 20 MB line": lambda p: p.write_bytes(b"a" * (20 << 20)),
    "JSON cut short": lambda p: p.write_text('{"name": ["x", '), "a JSON array": lambda p: p.write_text("[1, 2]"),
    "300 MB (sparse)": _sparse, "a directory": os.mkdir}


def reader_cases(work: Path) -> list[Hostile]:
    """Every reader a user can point at a file, with that file damaged each way."""
    cases = []
    for k, (damage, make) in enumerate(DAMAGE.items()):
        base = work / "readers" / f"r{k}"
        base.mkdir(parents=True)
        f = base / "file.json"
        make(f)
        tune = base / "tune-1"
        tune.mkdir()
        make(tune / "state.json")
        home = base / "home"
        home.mkdir()
        make(home / "mpis.json")
        good_rules = base / "rules" / "tuned.conf"
        good_rules.parent.mkdir()
        good_rules.write_text("1\n2\n1\n2\n1\n0 0 0 0\n")
        make(good_rules.parent / "tune.json")
        runs = ["--runs-dir", str(base / "runs")]
        for argv, ok in ((["tune", "--show", str(f)], False), (["tune", "--resume", str(tune), *runs], False),
                         (["sweep", str(f), *runs], False), (["sweep", str(f), "--dry-run", *runs], False),
                         (["sweep", str(f), "--submit", "slurm", "--dry-run", *runs], False),
                         (["tune", "--show", str(tune / "state.json")], False),
                         (["import", str(f), "--mpi-label", "x", *runs], False),
                         (["doctor", "--facts", str(f)], False), (["batch-run", str(f), *runs], False),
                         # a regular file is the launcher's to read (its own format): only what is no file is refused
                         (["run", "-b", "pingpong", "-n", "2", "--hostfile", str(f), "--submit", "slurm",
                           "--dry-run", *runs], f.is_file() and not f.is_symlink()),
                         (["tune", "--show", str(good_rules)], True)):
            cases.append(Hostile([argv], "reader", damage, exit0_ok=ok))
        cases.append(Hostile([["mpi", "list"]], "reader", f"{damage} (mpis.json)", {"MPISCOPE_HOME": str(home)}))
    return cases


def hostile_cases(work: Path, good: Path, other: Path) -> list[Hostile]:
    """Every case of issue 47's classes, made in `work` from the measured runs `good` and
    `other` (both of this machine's MPI)."""
    from mpiscope.execute.session import target
    tgt = target(None)
    work.mkdir(parents=True)
    spec = work / "spec.toml"
    spec.write_text('name = "inject"\n[measure]\nbenchmarks = ["pingpong"]\nsizes = "8"\n[factors]\nranks = [2]\n')
    facts = work / "facts.json"
    subprocess.run([sys.executable, "-m", "mpiscope", "doctor", "--timeout", "20", "--save-facts", str(facts)],
                   capture_output=True, timeout=600)
    return (injection_cases(work, spec, tgt.engine, Path(tgt.lib.mpicc).parent) + writer_cases(work, good, other, facts)
            + duplicate_cases(work, good, other) + reader_cases(work))


def verdict(case: Hostile, out: Outcome) -> str:
    """What went wrong with a case ("" for nothing): traceback, hang, executed, destroyed,
    silent, or the check's own words."""
    if out.code is None:
        return "hang"
    if "Traceback" in out.stderr:
        return "traceback"
    if case.canary is not None and case.canary.exists():
        return "executed"
    if case.check is not None:
        return case.check(out)
    if case.kind == "reader" and out.code == 0 and not case.exit0_ok:
        return "silent: a hostile file taken as a good one"
    return ""
