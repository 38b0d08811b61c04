"""The synthetic points of the analysis tests (`from .conftest import make_points`), from the
shared builders of tests/fixtures/synthetic.py."""
from mpiscope_test_fixtures.synthetic import geometric_sizes, make_points, typed

__all__ = ["geometric_sizes", "make_points", "typed"]
