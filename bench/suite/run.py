"""The test suite in figures: tests per lane, assert statements, and the fast lane's time.

    python bench/suite/run.py [--repo DIR] [--time] [--per-file [PYTEST_ARG ...]]

--repo: the checkout to count (default: this one; another checkout's tests run against
its own src/ through PYTHONPATH). --time: also run the fast lane (`pytest -m none`, or
`-m "not slow"` where the checkout has no lanes) and print its wall time. --per-file: run
pytest with these arguments (default: the whole suite) and print, per test file, its tests,
wall seconds, share, and the MPI launches, engine starts and builds its tests started in
pytest's process (bench/suite/launchcount.py), then the slowest tests. Set
MPISCOPE_TEST_HOME to keep engine builds between runs, as for the tests themselves.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

LANES = ("none", "mpi", "openmpi", "cluster", "browser", "notebook")


def asserts(tests: Path) -> tuple[int, int]:
    """assert statements and pytest.raises(...) calls in every test file."""
    n_assert = n_raises = 0
    for f in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            n_assert += isinstance(node, ast.Assert)
            n_raises += (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                         and node.func.attr == "raises")
    return n_assert, n_raises


def pytest_argv(repo: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], env


HERE = Path(__file__).resolve().parent
SLOWEST = 15  # tests listed after the per-file table


def per_file(repo: Path, args: list[str]) -> int:
    """pytest `args` with bench/suite/launchcount.py: the per-file table and the slowest tests."""
    with tempfile.NamedTemporaryFile(prefix="mpiscope-suite-", suffix=".jsonl") as log:
        argv, env = pytest_argv(repo, "-q", "-p", "launchcount", *(args or ["tests"]))
        env.update(PYTHONPATH=os.pathsep.join([env["PYTHONPATH"], str(HERE)]), MPISCOPE_SUITE_LOG=log.name)
        start = time.monotonic()
        done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
        wall = time.monotonic() - start
        rows = [json.loads(line) for line in Path(log.name).read_text().splitlines()]
    tail = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"pytest {' '.join(args or ['tests'])}: {wall:.0f} s wall; {tail[0]}")
    files: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        files[row["id"].split("::")[0]].append(row)
    total = sum(r["wall_s"] for r in rows) or 1.0
    print(f"{'file':48} {'tests':>5} {'wall s':>7} {'share':>6} {'launches':>8} {'engine':>6} {'builds':>6}")
    for name, rs in sorted(files.items(), key=lambda kv: -sum(r["wall_s"] for r in kv[1])):
        wall_s = sum(r["wall_s"] for r in rs)
        print(f"{name:48} {len(rs):5d} {wall_s:7.1f} {wall_s / total:6.1%} {sum(r['launch'] for r in rs):8d} "
              f"{sum(r['engine'] for r in rs):6d} {sum(r['build'] for r in rs):6d}")
    print(f"slowest {SLOWEST}:")
    for r in sorted(rows, key=lambda r: -r["wall_s"])[:SLOWEST]:
        print(f"  {r['wall_s']:7.1f} s  {r['launch']:3d} launches  load {r['load']:4.1f}  {r['id']}")
    load = os.getloadavg()
    print(f"load average after it (1, 5, 15 min): {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores")
    return done.returncode


def collected(repo: Path, marker: str | None) -> int:
    argv, env = pytest_argv(repo, "--collect-only", "-q", *(["-m", marker] if marker else []))
    out = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True).stdout
    found = re.search(r"(\d+)(?:/\d+)? tests? collected", out)
    return int(found.group(1)) if found else 0


def has_lanes(repo: Path) -> bool:
    return (repo / "tests" / "fixtures" / "lanes.py").is_file()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[2])
    ap.add_argument("--time", action="store_true", help="run the fast lane and print its wall time")
    ap.add_argument("--per-file", nargs=argparse.REMAINDER, metavar="PYTEST_ARG",
                    help="run pytest with these arguments and print where its time goes, file by file")
    args = ap.parse_args()
    repo = args.repo.resolve()
    if args.per_file is not None:
        return per_file(repo, args.per_file)
    n_assert, n_raises = asserts(repo / "tests")
    print(f"checkout: {repo}")
    print(f"tests collected: {collected(repo, None)}")
    lanes = LANES if has_lanes(repo) else ("not slow", "slow")
    for lane in lanes:
        print(f"  -m {lane!r}: {collected(repo, lane)}")
    print(f"assert statements: {n_assert}; pytest.raises calls: {n_raises}")
    if args.time:
        fast = "none" if has_lanes(repo) else "not slow"
        argv, env = pytest_argv(repo, "-q", "-m", fast)
        start = time.monotonic()
        done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
        wall = time.monotonic() - start
        print(f"fast lane (-m {fast!r}): {wall:.0f} s wall; {done.stdout.strip().splitlines()[-1]}")
        load = os.getloadavg()
        print(f"load average after it (1, 5, 15 min): {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
              f"on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
