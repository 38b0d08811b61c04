"""Store: where runs and sweeps live, and files written whole."""
