"""Measure: the one session, one part's launches, refinement rounds, sweeps, batch jobs."""
