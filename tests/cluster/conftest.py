"""Cluster tests: the real engine on namespace hosts and under a local Slurm.

The fixture plugins live in tests/fixtures/ (the package `mpiscope_test_fixtures`, loaded
by tests/conftest.py); their fixtures are re-exported here. Test modules import helpers
from `mpiscope_test_fixtures.engine`.
"""
from __future__ import annotations

import pytest

from mpiscope_test_fixtures import engine, netns, slurm

netns_hosts = netns.netns_hosts
two_hosts = netns.two_hosts
delay_hosts = netns.delay_hosts
slurm_cluster = slurm.slurm_cluster
mpich = engine.mpich
openmpi = engine.openmpi
any_mpi = engine.any_mpi


@pytest.fixture
def slurm_installed() -> None:
    """Slurm, munge and root, for a test that starts a private Slurm of its own (skipped without)."""
    slurm.require()
