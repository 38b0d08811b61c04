"""The Spack recipe (packaging/spack/mpiscope/package.py): what it depends on, and that its
install step builds a working engine with the MPI's mpicc through the engine Makefile.

Spack itself cannot be installed on this machine (it is fetched from its repository, not a
package registry), so `spack.package` is stood in for by the few names the recipe uses;
the build it runs is real: make, the engine Makefile, the embedded MPICH's mpicc."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "packaging" / "spack" / "mpiscope" / "package.py"


class Directives:
    """Records the recipe's directives (depends_on, version, ...) as Spack would collect them."""

    def __init__(self):
        self.calls: list[tuple[str, tuple, dict]] = []

    def __getattr__(self, name: str):
        return lambda *args, **kw: self.calls.append((name, args, kw))

    def of(self, name: str) -> list[tuple[tuple, dict]]:
        return [(a, k) for n, a, k in self.calls if n == name]


class Prefix(str):
    """Spack's Prefix: attribute access joins path components."""

    def __getattr__(self, part: str) -> "Prefix":
        return Prefix(os.path.join(self, part))


@pytest.fixture
def recipe(monkeypatch):
    d = Directives()
    package = types.ModuleType("spack.package")
    package.PythonPackage = type("PythonPackage", (), {})
    for name in ("version", "variant", "depends_on", "license"):
        setattr(package, name, getattr(d, name))
    package.run_after = lambda phase: (lambda f: f)
    package.join_path = os.path.join
    package.make = lambda *args: subprocess.run(["make", *args], check=True, capture_output=True, timeout=600)
    package.__all__ = [n for n in vars(package) if not n.startswith("_")]
    monkeypatch.setitem(sys.modules, "spack", types.ModuleType("spack"))
    monkeypatch.setitem(sys.modules, "spack.package", package)
    spec = importlib.util.spec_from_file_location("mpiscope_spack_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, d


def test_recipe_depends_on_mpi_at_run_time_and_builds_from_this_checkout(recipe):
    module, d = recipe
    deps = {args[0]: kw for args, kw in d.of("depends_on")}
    assert "build" in deps["mpi"]["type"] and "run" in deps["mpi"]["type"]
    assert deps["python@3.10:"]["type"] == ("build", "run")
    assert {"py-numpy", "py-scipy", "py-pandas", "py-rich"} <= set(deps)
    assert module.Mpiscope.git == f"file://{REPO}"
    assert [a for a, _ in d.of("version")] == [("main",)]


def test_install_step_builds_the_engine_with_the_mpis_mpicc(recipe, embedded_mpi, tmp_path):
    module, _ = recipe
    pkg = module.Mpiscope()
    pkg.spec = {"mpi": types.SimpleNamespace(mpicc=str(embedded_mpi.mpicc))}
    pkg.stage = types.SimpleNamespace(source_path=str(REPO))
    pkg.prefix = Prefix(tmp_path / "prefix")
    pkg.build_engine()
    engine = tmp_path / "prefix" / "libexec" / "mpiscope" / "mpiscope-engine"
    listed = subprocess.run([str(engine), "--list", "--json"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "pingpong" in {b["name"] for b in json.loads(listed.stdout)}
