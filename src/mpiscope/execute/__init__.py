"""Execute: the one measurement (planner, session), one part's launches, refinement rounds, sweeps,
tune, batch jobs, and doctor's launches (probe)."""
