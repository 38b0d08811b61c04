"""The test suite in figures: tests per lane, assert statements, and the fast lane's time.

    python bench/suite/run.py [--repo DIR] [--time]

--repo: the checkout to count (default: this one; another checkout's tests run against
its own src/ through PYTHONPATH). --time: also run the fast lane (`pytest -m none`, or
`-m "not slow"` where the checkout has no lanes) and print its wall time. Set
MPISCOPE_TEST_HOME to keep engine builds between runs, as for the tests themselves.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import time
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
    args = ap.parse_args()
    repo = args.repo.resolve()
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
