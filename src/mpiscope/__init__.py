"""mpiscope: measure, model and compare how an MPI library moves data.

The Python API (mpiscope.api, docs/python.md) is reachable from here, loaded on first use so that
`import mpiscope` stays cheap: `mpiscope.load("latest").table()`."""

__version__ = "0.1.0"

# mpiscope.api.__all__ (tests/test_api.py checks that they agree)
API = ("Comparison", "Description", "Model", "Prediction", "Run", "Runs", "RecordsWarning", "compare", "describe_run",
       "fit", "list_runs", "load", "load_runs", "load_sweep", "measure", "plan_run", "plots", "predict", "side_by_side", "table", "tune", "write_plots",
       "write_report", "import_runs")


def __getattr__(name: str):
    if name in API:
        import importlib  # by name: the API imports the package's modules, which import this one
        return getattr(importlib.import_module("mpiscope.api"), name)
    raise AttributeError(f"module 'mpiscope' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
