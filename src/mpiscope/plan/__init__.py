"""Describe and plan: the experiment description, specs, the engine's plan, which launches."""
