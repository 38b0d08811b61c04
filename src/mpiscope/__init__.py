"""mpiscope: measure, model and compare how an MPI library moves data."""

__version__ = "0.1.0"
