"""examples/analysis.ipynb runs from top to bottom in a fresh kernel against the embedded MPICH
(two tiny runs in a temporary runs directory) and shows what it promises: the table, the plots as
images, the model, the comparison. The committed notebook carries no outputs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "analysis.ipynb"


def test_the_committed_notebook_has_no_outputs():
    nb = json.loads(NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)


@pytest.fixture
def notebook_client():
    """nbclient, which runs a notebook in a Jupyter kernel (the notebook lane)."""
    return pytest.importorskip("nbclient")


def test_the_notebook_runs(embedded_mpi, notebook_client, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    runs = tmp_path / "runs"
    monkeypatch.setenv("MPISCOPE_RUNS", str(runs))  # the kernel inherits the environment
    monkeypatch.delenv("MPISCOPE_LAUNCHES", raising=False)  # the notebook says launches=1 itself
    nb = nbformat.read(NOTEBOOK, as_version=4)
    notebook_client.NotebookClient(nb, timeout=120, kernel_name="python3",
                                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # latency and bandwidth
    tables = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("time_median_us" in t for t in tables)  # the tidy table
    assert any("alpha_us" in t for t in tables)        # the model's regimes
    assert any("verdict" in t for t in tables)         # the comparison
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "allreduce: fastest algorithm" in text
    made = sorted(p.name for p in runs.iterdir() if (p / "run.json").is_file())
    assert len(made) == 2
    assert (runs / made[0] / "comparison.html").is_file()
