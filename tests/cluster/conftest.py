"""Cluster tests: the real engine on namespace hosts and under a local Slurm.

The fixture plugins live in tests/fixtures/; they are loaded here by path as
the package `mpiscope_test_fixtures` (no sys.path games, no clash with the
PyPI package called `fixtures`) and their fixtures re-exported. Test modules
import helpers from `mpiscope_test_fixtures.engine`.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PACKAGE = "mpiscope_test_fixtures"


def _load(*modules: str):
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(PACKAGE, FIXTURES / "__init__.py",
                                                      submodule_search_locations=[str(FIXTURES)])
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = pkg
        spec.loader.exec_module(pkg)
    return [importlib.import_module(f"{PACKAGE}.{m}") for m in modules]


netns, slurm, engine = _load("netns", "slurm", "engine")

netns_hosts = netns.netns_hosts
two_hosts = netns.two_hosts
slurm_cluster = slurm.slurm_cluster
mpich = engine.mpich
openmpi = engine.openmpi
any_mpi = engine.any_mpi
