"""--order on two namespace hosts: block keeps each host's ranks together, cyclic
deals them across the hosts, and the records show it (context and grid rows/columns)."""
from __future__ import annotations

from mpiscope_test_fixtures.engine import QUICK, Records  # loaded by conftest.py


def grid_run(cluster, mpi, order: str) -> Records:
    # the launcher places ranks 0,1 on the first host and 2,3 on the second
    argv = [str(mpi.launcher), *cluster.openmpi_args(2), str(mpi.engine), "--order", order, "--grid", "2x2",
            "--sizes", "64", *QUICK, "grid"]
    done = cluster.run(argv, env=mpi.env(cluster.openmpi_env), timeout=90)
    rec = Records.parse(done.stdout, done.returncode, done.stderr)
    assert done.returncode == 0, rec.explain()
    return rec


def test_block_and_cyclic_place_grid_rows_differently(two_hosts, openmpi):
    h0, h1 = two_hosts.hosts
    block, cyclic = grid_run(two_hosts, openmpi, "block"), grid_run(two_hosts, openmpi, "cyclic")
    b_ctx, c_ctx = block.of("context")[0], cyclic.of("context")[0]
    assert [r["launch_rank"] for r in b_ctx["ranks"]] == [0, 1, 2, 3]
    assert [r["launch_rank"] for r in c_ctx["ranks"]] == [0, 2, 1, 3]
    assert [r["host"] for r in b_ctx["ranks"]] == [h0, h0, h1, h1]
    assert [r["host"] for r in c_ctx["ranks"]] == [h0, h1, h0, h1]
    assert b_ctx["ranks_by_host"] == [[0, 1], [2, 3]] and c_ctx["ranks_by_host"] == [[0, 2], [1, 3]]
    (b,), (c,) = block.points("grid"), cyclic.points("grid")
    assert b["order"] == "block" and c["order"] == "cyclic"
    # block: each process row inside one host, each column across both
    assert [row["hosts"] for row in b["grid"]["rows"]] == [[h0], [h1]]
    assert [col["hosts"] for col in b["grid"]["columns"]] == [[h0, h1], [h0, h1]]
    assert (b["grid"]["max_hosts_per_row"], b["grid"]["max_hosts_per_column"]) == (1, 2)
    # cyclic: transposed, as the report says
    assert [row["hosts"] for row in c["grid"]["rows"]] == [[h0, h1], [h0, h1]]
    assert [col["hosts"] for col in c["grid"]["columns"]] == [[h0], [h1]]
    assert (c["grid"]["max_hosts_per_row"], c["grid"]["max_hosts_per_column"]) == (2, 1)
