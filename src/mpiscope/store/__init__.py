"""Store: where runs and sweeps live, who owns a run, and which earlier runs a run learns from."""
