"""Malformed invocations of every mpiscope command, and every reader on damaged run directories,
as a user types them (a subprocess each): how many ended with a clean exit 2, a traceback, a hang
(no end within --timeout), or were accepted with exit 0. Figures, not a test (issue 18).

    python bench/fuzz/run.py [--jobs 2] [--timeout 60] [--seed 18] [--only CMD,...] [--show-bad]

Malformed invocations are bad by construction (one option out of range or not a choice, an
unknown option, a missing or nonexistent argument, a spec that is no spec, a damaged OSU or IMB
file to `import`), so exit 0 there is nonsense accepted. On damaged run directories a reader may
rightly succeed, skipping what it cannot read; its exit 0 is classified:
  warned               a warning on stderr names the damaged file (records.jsonl or run.json);
  harmless by design   the damage is an unknown extra field (consumers ignore unknown fields),
                       or the reader never reads the damaged file (`runs` reads only run.json);
  silent               neither: damage skipped without a word, the figure that must be 0.
`doctor` gets --timeout 5 in front of every case, so a case it accepted cannot run for long.
Issue 32 adds damaged run directories whose files would hang a reader or exhaust its memory
(a FIFO, links to /dev/zero and /dev/urandom, a record nested 100,000 deep, a 65 MiB line, a
5 GiB sparse file, a run.json that is a FIFO, a directory or /dev/zero), and a class of its own:
a run named twice, imported means pooled with measured runs, plans past their caps, a spec
nested 5,000 deep (each should be a clean exit 2).
Issue 47 adds four classes with checks of their own (bench/fuzz/hostile.py): a command hidden in
every path-like value that reaches make or a batch script (a canary file tells one that ran),
writers onto FIFOs and device nodes (the node must survive), duplicated records and copied runs
(an exit 0 must say so), and every reader a user can point at a damaged file.

    python bench/fuzz/run.py --classes injection,writer,duplicate,reader   (issue 47's alone)
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hostile  # noqa: E402
from mpiscope import cli  # noqa: E402
from mpiscope.commands import options  # noqa: E402

BAD_NUMBERS = {options.positive_float: ["0", "-1", "nan", "inf", "x"], options.nonneg_float: ["-1", "nan", "inf"],
               options.positive_int: ["0", "-3", "1.5", "x"], options.nonneg_int: ["-1", "1.5", "x"],
               options.names: ["", ","], float: ["nan", "inf", "-inf", "-1", "x", "1e999"], int: ["-1", "x", "1.5"]}
BAD_RECORDS = [
    '{"type": "point", "benchmark": 5, "size": 8}', '{"type": "point", "benchmark": "pingpong", "size": "x"}',
    '{"type": "point"}', '{"type": "timeout", "benchmark": null, "size": null}',
    '{"type": "point", "benchmark": "pingpong", "size": -5}',
    '{"type": "point", "benchmark": "pingpong", "size": 8, "ranks": "two"}',
    '{"type": "point", "benchmark": "pingpong", "size": 1e400}', '[]', '"x"', 'not json',
    '{"type": "context", "world_size": -1}', '{"type": "point", "benchmark": "pingpong", "size": 8, "ranks": 2, '
    '"time_us": "fast"}', '{"type": "end", "points": "many"}',
]
BAD_RUN_JSON = ["[]", "null", '"x"', "{", '{"status": 5}', '{"format": 2, "parts": [1]}',
                '{"format": 2, "mpi": "x", "launches": "y", "points": "z"}', '{"id": 5, "pid": "x"}',
                '{"format": 2, "parts": [{"plan": 5}]}', '{"status": "running", "pid": 1e400}']
READERS = [["show"], ["table"], ["export", "--format", "csv"], ["export", "--format", "parquet", "-o", "{tmp}/x.pq"],
           ["plot", "-o", "{tmp}/plots"], ["report", "-o", "{tmp}/r.html"], ["model"], ["compare", "{good}"],
           ["pairs"], ["run", "--resume"]]


@dataclass
class Case:
    argv: list[str]
    kind: str            # malformed | damaged
    damage: str = ""     # damaged: how the run directory was damaged (its copy's name)


@dataclass
class Result:
    case: Case
    code: int | None     # None: hung
    stderr: str


def commands() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(path: tuple[str, ...], p: argparse.ArgumentParser) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found[path] = p
        for s in subs:
            for name, child in s.choices.items():
                walk(path + (name,), child)
    walk((), cli.parser())
    return found


CLASSES = ("malformed", "damaged", "issue 32", "injection", "writer", "duplicate", "reader")


def good_run(work: Path, name: str = "good") -> Path:
    runs = work / name
    r = subprocess.run([sys.executable, "-m", "mpiscope", "run", "-b", "pingpong,allreduce", "-n", "2", "--sizes",
                        "1:4K", "--reps", "5", "--launches", "1", "--no-progress", "--no-report", "--runs-dir",
                        str(runs)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"cannot make the run to damage: {r.stderr}")
    return next(runs.iterdir())


HARMLESS = ("extra-record-field", "extra-run-field")  # unknown fields: read past by design
RECORDS_ONLY = ("rec", "half", "garbage", "empty", "missing", "directory", "extra-record-field",
                "fifo", "zero", "urandom", "deep", "long", "sparse")


def damaged_runs(good: Path, work: Path) -> list[Path]:
    """Copies of `good`, each damaged one way; the copy's parent directory names the damage."""
    out = []

    def copy(name: str) -> Path:
        d = work / "damaged" / name
        shutil.copytree(good, d / good.name)
        out.append(d / good.name)
        return d / good.name

    for k, line in enumerate(BAD_RECORDS):
        with open(copy(f"rec{k}") / "records.jsonl", "a") as f:
            f.write(line + "\n")
    data = (good / "records.jsonl").read_bytes()
    (copy("half") / "records.jsonl").write_bytes(data[:len(data) // 2])
    (copy("garbage") / "records.jsonl").write_bytes(bytes(random.Random(1).randrange(256) for _ in range(4096)))
    (copy("empty") / "records.jsonl").write_bytes(b"")
    (copy("missing") / "records.jsonl").unlink()
    (copy("directory") / "records.jsonl").unlink()
    (out[-1] / "records.jsonl").mkdir()
    for k, text in enumerate(BAD_RUN_JSON):
        (copy(f"meta{k}") / "run.json").write_text(text)
    lines = [json.loads(x) for x in data.decode().splitlines()]
    (copy("extra-record-field") / "records.jsonl").write_text(
        "".join(json.dumps({**x, "note_from_a_later_version": [1, "x"]}) + "\n" for x in lines))
    meta = json.loads((good / "run.json").read_text())
    (copy("extra-run-field") / "run.json").write_text(json.dumps({**meta, "note_from_a_later_version": {"a": 1}}))
    unreadable_files(copy, data)
    return out


def unreadable_files(copy, data: bytes) -> None:
    """Issue 32: files that would hang a reader or exhaust its memory."""
    fifo = copy("fifo") / "records.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)
    for name, device in (("zero", "/dev/zero"), ("urandom", "/dev/urandom")):
        target = copy(name) / "records.jsonl"
        target.unlink()
        target.symlink_to(device)
    (copy("deep") / "records.jsonl").write_bytes(data + b'{"type": "point", "x": ' + b"[" * 100_000
                                                 + b"]" * 100_000 + b"}\n")
    (copy("long") / "records.jsonl").write_bytes(data + b'{"type": "point", "x": "' + b"a" * (65 << 20) + b'"}\n')
    with open(copy("sparse") / "records.jsonl", "r+b") as f:
        f.truncate(5 << 30)  # 5 GiB that take no room
    for name, make in (("meta-fifo", os.mkfifo), ("meta-dir", os.mkdir),
                       ("meta-zero", lambda p: os.symlink("/dev/zero", p))):
        target = copy(name) / "run.json"
        target.unlink()
        make(target)


def damage_of(run_dir: Path) -> str:
    return run_dir.parent.name


def damaged_file(damage: str) -> str:
    return "records.jsonl" if damage.startswith(RECORDS_ONLY) else "run.json"


def import_cases(work: Path) -> list[Case]:
    """`import` fed damaged and garbage files, and the wrong --format: each must be refused."""
    data = Path(__file__).resolve().parents[2] / "tests" / "data" / "imports"
    osu, imb = data / "osu-7.4_latency_mpich.txt", data / "imb-2021_p2p_mpich.txt"
    where = work / "imports"
    where.mkdir()
    files: list[Path] = []

    def damaged(name: str, content: bytes) -> None:
        files.append(where / name)
        files[-1].write_bytes(content)

    for src in (osu, imb):
        text = src.read_text()
        rows = [i for i, ln in enumerate(text.splitlines()) if ln.strip()[:1].isdigit()]
        tag = src.stem.split("_")[0]

        def with_row(name: str, change) -> None:  # one data row's fields changed
            ls = text.splitlines()
            ls[rows[len(rows) // 2]] = change(ls[rows[len(rows) // 2]].split())
            damaged(f"{tag}-{name}.txt", ("\n".join(ls) + "\n").encode())

        damaged(f"{tag}-cut.txt", text.encode()[:len(text) // 2 + 3])
        damaged(f"{tag}-header-only.txt", ("\n".join(text.splitlines()[:rows[0]]) + "\n").encode())
        with_row("size-word", lambda f: " ".join(["x" + f[0], *f[1:]]))
        with_row("size-negative", lambda f: " ".join(["-" + f[0], *f[1:]]))
        with_row("size-huge", lambda f: " ".join(["99999999999999999999", *f[1:]]))
        with_row("figure-nan", lambda f: " ".join([f[0], "nan", *f[2:]]))
        with_row("figure-inf", lambda f: " ".join([f[0], *f[1:-1], "inf"]))
        with_row("figure-negative", lambda f: " ".join([f[0], *f[1:-1], "-7"]))
        with_row("columns-missing", lambda f: f[0])
        with_row("columns-extra", lambda f: " ".join([*f, "1", "2", "3", "4", "5"]))
        with_row("binary-row", lambda f: "\x00\x01\x02")
        damaged(f"{tag}-rows-shuffled-in-header.txt", ("\n".join(text.splitlines()[rows[0]:rows[0] + 3]
                                                            + text.splitlines()) + "\n").encode())
    damaged("binary.txt", b"\xff\xfe\x00garbage")
    damaged("empty.txt", b"")
    damaged("garbage.txt", bytes(random.Random(2).randrange(256) for _ in range(2048)))
    damaged("words.txt", b"hello world\nthis is not a benchmark\n")
    runs = ["--runs-dir", str(work / "runs")]
    cases = [Case(["import", str(f), *runs], "malformed") for f in files]
    cases += [Case(["import", str(f), "--format", fmt, *runs], "malformed")
              for f in files[:4] + files[12:16] for fmt in ("osu", "imb")]
    cases += [Case(["import", str(osu), "--format", "imb", *runs], "malformed"),
              Case(["import", str(imb), "--format", "osu", *runs], "malformed"),
              Case(["import", str(osu), str(files[2]), *runs], "malformed"),   # one good file, one damaged
              Case(["import", str(where), *runs], "malformed"),                # a directory
              Case(["import", "/nonexistent/osu.txt", *runs], "malformed"),
              Case(["import", str(osu), "--ranks", "0", *runs], "malformed"),
              Case(["import", str(osu), "--mpi-label", "", *runs], "malformed")]
    return cases


def malformed(cmds: dict[tuple[str, ...], argparse.ArgumentParser], good: Path, work: Path,
              rng: random.Random) -> list[Case]:
    cases: list[Case] = []
    spec_dir = work / "specs"
    spec_dir.mkdir()
    specs = {"binary": b"\xff\xfe", "empty": b"", "comment": b"# nothing\n", "toml-error": b"[sweep\n",
             "unknown-key": b'[sweep]\nname = "x"\nbogus = 1\n', "no-measure": b'[sweep]\nname = "x"\n',
             "bad-factor": b'[sweep]\nname = "x"\n[measure]\nbenchmarks = ["pingpong"]\n[factors]\nranks = []\n',
             "huge-ranks": b'[measure]\nbenchmarks = ["pingpong"]\nsizes = "8"\n[factors]\nranks = [2, 100000]\n',
             "ranks-zero": b'[measure]\nbenchmarks = ["pingpong"]\n[factors]\nranks = [0]\n',
             "ranks-word": b'[measure]\nbenchmarks = ["pingpong"]\n[factors]\nranks = ["two"]\n',
             "oversubscribe-word": b'[measure]\nbenchmarks = ["pingpong"]\noversubscribe = "yes"\n',
             "sizes-negative": b'[measure]\nbenchmarks = ["pingpong"]\nsizes = "-1"\n',
             "no-such-bench": b'[measure]\nbenchmarks = ["nosuchbench"]\n',
             "no-such-mpi": b'[measure]\nbenchmarks = ["pingpong"]\n[factors]\nmpi = ["nosuchmpi"]\n'}
    for name, data in specs.items():
        (spec_dir / f"{name}.toml").write_bytes(data)
    runs_dir = work / "runs"

    def positionals(path: tuple[str, ...]) -> list[str]:
        out = []
        for a in cmds[path]._actions:
            if a.option_strings or a.nargs in ("?", "*") or isinstance(a, argparse._SubParsersAction):
                continue
            out.append({"spec": str(spec_dir / "no-measure.toml"), "config": str(work / "nosuch.json"),
                        "what": "/nonexistent/prefix", "name": "nosuchmpi"}.get(a.dest, str(good)))
        return out

    def with_runs_dir(path: tuple[str, ...], argv: list[str]) -> list[str]:
        takes = any("--runs-dir" in a.option_strings for a in cmds[path]._actions)
        return argv + (["--runs-dir", str(runs_dir)] if takes else [])

    for path in sorted(cmds):
        actions = [a for a in cmds[path]._actions if a.option_strings and a.dest not in ("help", "runs_dir")]
        given = positionals(path)
        base = [*path, *given] + (["--timeout", "5"] if path == ("doctor",) else [])
        # the only thing wrong: one option's value
        for a in actions:
            bad = BAD_NUMBERS.get(a.type, [])
            if a.choices:
                bad = ["", "nosuch", str(rng.random())]
            for value in bad:
                cases.append(Case(with_runs_dir(path, [*base, f"{a.option_strings[-1]}={value}"]), "malformed"))
            if a.nargs != 0 and a.type is None and not a.choices:  # a value-taking option left without one
                cases.append(Case(with_runs_dir(path, [*base, a.option_strings[-1]]), "malformed"))
        cases.append(Case(with_runs_dir(path, [*base, "--no-such-option"]), "malformed"))
        cases.append(Case(with_runs_dir(path, [*base, "extra-argument", "another"]), "malformed"))
        if given:
            cases.append(Case(with_runs_dir(path, list(path)), "malformed"))  # a required argument missing
        # a jumble: the command's own options in random order with junk values, then one unknown option
        for _ in range(8):
            names = [s for a in actions for s in a.option_strings] or ["--x"]
            junk = [rng.choice(names + ["", "-", "nan", "-1", "1e999", "\u00e9", "'"]) for _ in range(rng.randint(1, 5))]
            cases.append(Case(with_runs_dir(path, [*base, *junk, f"--bogus-{rng.randrange(1000)}"]), "malformed"))
    # arguments that name nothing
    for path in sorted(cmds):
        if any(a.dest in ("run", "runs", "baseline", "candidate") for a in cmds[path]._actions):
            for ref in ("nosuchrun", "", "/nonexistent/run", str(work / "specs")):
                argv = [ref if x == str(good) else x for x in [*path, *positionals(path)]]
                cases.append(Case(with_runs_dir(path, argv), "malformed"))
    for name in specs:
        for extra in ([], ["--dry-run"], ["--resume"]):
            cases.append(Case(["sweep", str(spec_dir / f"{name}.toml"), *extra, "--runs-dir", str(runs_dir)],
                              "malformed"))
    # measuring commands with one nonsense value each (if accepted they would measure)
    for argv in (["run", "-n", "0"], ["run", "-n", "100000", "-b", "pingpong"], ["run", "-b", ""],
                 ["run", "--sizes", "-1"], ["run", "--sizes", "1:64:*0x2"], ["run", "--sizes", "2147483647G"],
                 ["run", "--reps", "30000000"], ["run", "--order", "5,1"], ["run", "--ci-target", "inf"],
                 ["run", "--max-time", "inf"], ["run", "--sbatch-args", "x"], ["run", "--dry-run"],
                 ["run", "--env", "=x"], ["run", "--engine-args", "--bogus"], ["run", "--mpi", ""],
                 ["run", "--launches", "0"], ["run", "--launches", "many"], ["run", "--resume", str(good), "-n", "4"],
                 ["run", "--hosts", ",", "-n", "2"], ["study", "ring", "-n", "3"], ["study", "grid", "-n", "0"],
                 ["study", "grid", "--sizes", "x"], ["predict", "--alpha", "nan", "--beta", "1"],
                 ["table", str(good), "--latency-upto", "-5"], ["mpi", "show", ""], ["mpi", "add", ""],
                 ["runs", "--runs-dir", "/nonexistent"], ["plot", str(good), "-o", "/proc/x"],
                 ["report", str(good), "-o", "/proc/x/r.html"], ["export", str(good), "-o", "/proc/x/x.csv"],
                 ["doctor", "--timeout", "5", "-n", "100000"], ["doctor", "--timeout", "5", "-n", "0"],
                 ["doctor", "--timeout", "0"], ["doctor", "--timeout", "5", "--facts", str(good / "run.json")],
                 ["doctor", "--timeout", "5", "--save-facts", "/proc/x/facts.json"],
                 ["study", "ring", "-n", "1000"], ["sweep", str(spec_dir / "huge-ranks.toml"), "--dry-run"]):
        cases.append(Case(argv + (["--runs-dir", str(runs_dir)] if argv[0] in ("run", "study") else []), "malformed"))
    return cases


def damaged(dirs: list[Path], good: Path, work: Path) -> list[Case]:
    cases = []
    for d in dirs:
        out = work / "out" / d.parent.name
        for reader in READERS:
            args = [a.format(tmp=out, good=good) for a in reader]
            if reader[0] == "run":  # resume repairs what it can: on its own copy, not under the other readers
                mine = work / "resumed" / d.parent.name
                shutil.copytree(d, mine / d.name, symlinks=True, copy_function=_copy_special)
                argv = [*args, str(mine / d.name), "--no-progress", "--no-report"]
            else:
                argv = [args[0], str(d), *args[1:]]
            cases.append(Case(argv, "damaged", damage_of(d)))
        cases.append(Case(["runs", "--runs-dir", str(d.parent)], "damaged", damage_of(d)))
        cases.append(Case(["predict", "--from", str(d)], "damaged", damage_of(d)))
    return cases


def _copy_special(src: str, dst: str) -> None:
    """A FIFO is made anew (reading it would wait), a sparse file of GiBs stays sparse."""
    st = os.stat(src)
    if stat.S_ISFIFO(st.st_mode):
        os.mkfifo(dst)
    elif st.st_size > 1 << 30:
        with open(dst, "wb") as f:
            f.truncate(st.st_size)
    else:
        shutil.copy2(src, dst)


def safety_cases(good: Path, work: Path) -> list[Case]:
    """Issue 32: a run named twice, imported means pooled with measured launches, plans past
    their caps; each should be one clean line and exit 2."""
    from mpiscope.importers import import_files
    runs = good.parent
    osu = import_files([Path(__file__).resolve().parents[2] / "tests" / "data" / "imports"
                        / "osu-7.4_latency_mpich.txt"], mpi_label="MPICH", runs_dir=runs)
    spec = work / "huge.toml"
    levels = ", ".join(f'"{i}"' for i in range(10))
    spec.write_text('name = "huge"\n[measure]\nbenchmarks = ["pingpong"]\n[factors.env]\n'
                    + "".join(f"V{k} = [{levels}]\n" for k in range(8)))  # 10^8 configurations
    deep = work / "deep.toml"
    deep.write_text('name = "deep"\n[factors]\nranks = ' + "[" * 5000 + "2" + "]" * 5000 + "\n")
    hosts = ",".join(f"h{i}" for i in range(10_000))
    argvs = [["compare", good.name, good.name], ["compare", f"{good.name},{good.name}", good.name],
             ["table", good.name, good.name], ["model", good.name, good.name], ["model", osu.name, good.name],
             ["compare", f"{osu.name},{good.name}", good.name], ["sweep", str(spec), "--dry-run"],
             ["sweep", str(deep), "--dry-run"], ["run", "-b", "pingpong", "--hosts", hosts, "--submit", "slurm",
                                                 "--dry-run"]]
    return [Case([*argv, "--runs-dir", str(runs)], "issue 32") for argv in argvs]


def exit0_verdict(r: Result) -> str:
    """warned | harmless | silent, for a reader of a damaged run directory that exited 0."""
    name = damaged_file(r.case.damage)
    if any("warning:" in ln and name in ln for ln in r.stderr.splitlines()):
        return "warned"
    if r.case.damage in HARMLESS or (r.case.argv[0] == "runs" and name == "records.jsonl"):
        return "harmless"
    return "silent"


def attempt(case: Case, timeout: float) -> Result:
    proc = subprocess.Popen([sys.executable, "-m", "mpiscope", *case.argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
        return Result(case, proc.returncode, err)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its launcher and ranks too: they share its session
        proc.communicate()
        return Result(case, None, "")


def attempt_hostile(case: hostile.Hostile, timeout: float, work: Path) -> hostile.Outcome:
    """A case of issue 47: its commands in turn (while each exits 0), a dry run's batch script
    run by bash, FIFOs drained meanwhile."""
    drains = hostile.open_drains(case)
    out = hostile.Outcome(0, "", "")
    try:
        for argv in case.argvs:
            proc = subprocess.Popen([sys.executable, "-m", "mpiscope", *argv], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, errors="replace",
                                    start_new_session=True, cwd=case.cwd, env=hostile.mpiscope_env(case))
            try:
                stdout, stderr = proc.communicate(timeout=timeout)
                out = hostile.Outcome(proc.returncode, out.stdout + stdout, out.stderr + stderr)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                return hostile.Outcome(None, out.stdout, out.stderr)
            if case.script:
                hostile.run_script(case, stdout, work)
            if proc.returncode != 0:
                break
    finally:
        for d in drains:
            d.close()
    return out


def report_hostile(done: list[tuple[hostile.Hostile, hostile.Outcome]], show_bad: bool) -> None:
    print(f"{'issue 47 class':10} {'tried':>6} {'exit 2':>7} {'exit 0':>7} {'traceback':>9} {'hang':>5} "
          f"{'executed':>8} {'destroyed':>9} {'silent':>6}")
    for kind in ("injection", "writer", "duplicate", "reader"):
        mine = [(c, o) for c, o in done if c.kind == kind]
        if not mine:
            continue
        verdicts = Counter(hostile.verdict(c, o).split(":")[0] for c, o in mine)
        codes = Counter(o.code for _, o in mine)
        print(f"{kind:10} {len(mine):>6} {codes[2]:>7} {codes[0]:>7} {verdicts['traceback']:>9} {verdicts['hang']:>5} "
              f"{verdicts['executed']:>8} {verdicts['destroyed']:>9} {verdicts['silent']:>6}")
        if show_bad:
            for c, o in mine:
                v = hostile.verdict(c, o)
                if v:
                    line = o.stderr.strip().splitlines()[-1][:200] if o.stderr.strip() else ""
                    print(f"  {v} [{c.what}]: mpiscope {' '.join(map(repr, c.argvs[-1]))}\n    {line}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--only", metavar="CMD,...", help="only the cases of these commands (a quicker look)")
    ap.add_argument("--show-bad", action="store_true", help="print every traceback, hang and silent exit 0")
    ap.add_argument("--max-minutes", type=float, help="start no case after this long (cases in a random order)")
    ap.add_argument("--classes", default=",".join(CLASSES).replace(" ", "-"),
                    help=f"which classes of cases (default all: {', '.join(c.replace(' ', '-') for c in CLASSES)})")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = Path(tempfile.mkdtemp(prefix="mpiscope-fuzz-"))
    try:
        classes = {c.replace("-", " ") for c in a.classes.split(",")}
        good = good_run(work)
        cmds = commands()
        cases = ((malformed(cmds, good, work, rng) + import_cases(work) if "malformed" in classes else [])
                 + (damaged(damaged_runs(good, work), good, work) if "damaged" in classes else [])
                 + (safety_cases(good, work) if "issue 32" in classes else []))
        hostiles = [c for c in hostile.hostile_cases(work / "hostile", good, good_run(work, "other"))
                    if c.kind in classes] if classes & {"injection", "writer", "duplicate", "reader"} else []
        if a.only:
            cases = [c for c in cases if c.argv[0] in a.only.split(",")]
            hostiles = [c for c in hostiles if c.argvs[0][0] in a.only.split(",")]
        print(f"{len(cases) + len(hostiles)} cases ({len(hostiles)} of issue 47's classes)", flush=True)
        for c in cases:
            for arg in c.argv:
                if arg.startswith(str(work / "out")):
                    Path(arg).parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        deadline = started + 60 * a.max_minutes if a.max_minutes else float("inf")

        def one(c: Case | hostile.Hostile) -> Result | hostile.Outcome | None:
            if time.monotonic() > deadline:  # out of time: the figures are those of the cases that ran
                return None
            return attempt_hostile(c, a.timeout, work) if isinstance(c, hostile.Hostile) else attempt(c, a.timeout)
        order: list[Case | hostile.Hostile] = [*cases, *hostiles]
        if a.max_minutes:
            rng.shuffle(order)  # cut short, every class is still sampled
        with ThreadPoolExecutor(a.jobs) as pool:
            ran = [(c, r) for c, r in zip(order, pool.map(one, order)) if r is not None]
        results = [r for c, r in ran if isinstance(c, Case)]
        done = [(c, r) for c, r in ran if isinstance(c, hostile.Hostile)]
        took = time.monotonic() - started
        print(f"ran {len(ran)} of {len(order)} cases", flush=True)
        report_hostile(done, a.show_bad)  # before the work directory goes: checks look at it
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"commands: {len(cmds)} ({', '.join(' '.join(p) for p in sorted(cmds))})")
    if not results:
        print(f"took {took:.0f} s with {a.jobs} jobs")
        return 0
    print(f"malformed invocations by command: "
          f"{dict(sorted(Counter(r.case.argv[0] for r in results if r.case.kind == 'malformed').items()))}")
    for kind in ("malformed", "damaged", "issue 32"):
        mine = [r for r in results if r.case.kind == kind]
        if not mine:
            continue
        tb = [r for r in mine if "Traceback" in r.stderr]
        hung = [r for r in mine if r.code is None]
        ok = [r for r in mine if r.code == 0]
        clean2 = [r for r in mine if r.code == 2 and "Traceback" not in r.stderr
                  and len([ln for ln in r.stderr.splitlines() if "error:" in ln]) == 1]
        other = Counter(r.code for r in mine if r.code not in (0, 2, None))
        if kind == "issue 32":
            print(f"issue 32 (a run twice, pooling, plan caps, deep spec): tried {len(mine)} / clean exit 2 "
                  f"{len(clean2)} / tracebacks {len(tb)} / hangs {len(hung)} / accepted with exit 0 {len(ok)}"
                  + (f" / other exits {dict(other)}" if other else ""))
            bad = tb + hung + ok
        elif kind == "malformed":
            print(f"malformed invocations: tried {len(mine)} / clean exit 2 {len(clean2)} / tracebacks {len(tb)} / "
                  f"hangs {len(hung)} / accepted with exit 0 {len(ok)}"
                  + (f" / other exits {dict(other)}" if other else ""))
            bad = tb + hung + ok
        else:
            verdicts = {id(r): exit0_verdict(r) for r in ok}
            by = Counter(verdicts.values())
            print(f"readers of damaged run directories: tried {len(mine)} / clean exit 2 {len(clean2)} / "
                  f"tracebacks {len(tb)} / hangs {len(hung)} / exit 0 {len(ok)}: warned {by['warned']}, "
                  f"harmless by design {by['harmless']}, silent {by['silent']}"
                  + (f" / other exits {dict(other)}" if other else ""))
            for verdict in ("warned", "harmless", "silent"):
                kinds = Counter(r.case.damage for r in ok if verdicts[id(r)] == verdict)
                if kinds:
                    print(f"  exit 0, {verdict}, by damage: {dict(sorted(kinds.items()))}")
            bad = tb + hung + [r for r in ok if verdicts[id(r)] == "silent"]
        if a.show_bad:
            for r in bad:
                what = "hang" if r.code is None else "traceback" if "Traceback" in r.stderr else f"exit {r.code}"
                print(f"  {what}: mpiscope {' '.join(repr(x) if not x or ' ' in x else x for x in r.case.argv)}")
                if "Traceback" in r.stderr:
                    print("    " + r.stderr.strip().splitlines()[-1])
    print(f"took {took:.0f} s with {a.jobs} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
