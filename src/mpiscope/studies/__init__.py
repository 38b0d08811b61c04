"""Studies: fixed experiments from the reference material, each a list of
series (engine launches) saved as one run."""
