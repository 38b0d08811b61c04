"""Every threshold of the results and analysis layers lives in a policy object (results.policy,
analysis.policy) beside its evidence: no module of those layers compares with a number of its own."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from mpiscope.analysis.policy import ANALYSIS
from mpiscope.results.policy import POLICY

SRC = Path(__file__).resolve().parents[2] / "src" / "mpiscope"
# 0, 1, 2 and a half are arithmetic; 3 the fewest points a line with a spare or a spread needs;
# below 1e-9 a guard against rounding, not a threshold
ARITHMETIC = {0, 1, 2, 3, -1, 0.5}
# numbers that are not statistics: another library's own choice, file formats, a message's length
NOT_STATISTICS = {("predict.py", "mpich_default"), ("tunefile.py", None), ("checks.py", None)}


def literals_in_comparisons(path: Path, root: Path = SRC) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    functions = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    skipped = {id(n) for f in functions if (path.name, f.name) in NOT_STATISTICS for n in ast.walk(f)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or id(node) in skipped:
            continue
        for operand in (node.left, *node.comparators):
            for c in ast.walk(operand):
                if isinstance(c, ast.Constant) and type(c.value) in (int, float) \
                        and c.value not in ARITHMETIC and abs(c.value) >= 1e-9:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {c.value!r}")
    return found


def modules() -> list[Path]:
    return [p for layer in ("analysis", "results") for p in sorted((SRC / layer).rglob("*.py"))
            if p.name != "policy.py" and (p.name, None) not in NOT_STATISTICS]


def test_no_threshold_outside_the_policies():
    found = [hit for p in modules() for hit in literals_in_comparisons(p)]
    assert not found, "thresholds outside results.policy / analysis.policy:\n" + "\n".join(found)


def test_the_scan_finds_a_threshold(tmp_path):
    # the scan itself must see a literal threshold, nested or not, and leave arithmetic alone
    f = tmp_path / "m.py"
    f.write_text("def f(x, y):\n    return x > 1.25 * y or abs(x) < max(4, y) or x > 2 * y or x <= 1e-12\n")
    assert [hit.split(": ")[1] for hit in literals_in_comparisons(f, tmp_path)] == ["1.25", "4"]


@pytest.mark.parametrize("policy", [POLICY, ANALYSIS])
def test_every_constant_is_documented(policy):
    docs = "".join((SRC.parents[1] / "docs" / name).read_text() for name in ("statistics.md", "models.md"))
    missing = [f.name for f in dataclasses.fields(policy) if f"`{f.name}`" not in docs]
    assert not missing, f"constants without their evidence in docs/statistics.md or docs/models.md: {missing}"
