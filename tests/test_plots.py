"""Plots drawn from real runs (the real CLI and engine, tiny sizes): axes, scales, series, legend
labels and CI bands are checked, never pixels."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from mpiscope.records import Point, Stats
from mpiscope.results.table import tidy
from mpiscope.report import plots
from mpiscope.store.runs import Run


FAST = ["--max-time", "0.05", "--no-progress", "--no-report"]
ENV = "MPIR_CVAR_REDUCE_INTRA_ALGORITHM"  # recorded in the context, harmless to point-to-point


def cli_run(cli, runs_dir: Path, *args: str) -> Run:
    r = cli("run", "--runs-dir", str(runs_dir), *FAST, *args)
    assert r.returncode == 0, r.stderr
    path = re.search(r"saved in (\S+)", r.stdout).group(1)
    return Run(Path(path))


def api_run(lib, engine, runs_dir: Path, benches: list[str], sizes: str, options: list[str],
            factors: dict | None = None) -> Run:
    from mpiscope.execute.part import Target
    from mpiscope.plan.engine import Part, make_plan
    from mpiscope.execute.session import Measurement, Session
    plan, _ = make_plan(engine, benches, 2, sizes=sizes, max_time=0.05, engine_options=options)
    run, outcome = Session(runs_dir, Console(stderr=True), progress=False).run(
        Measurement(Target(lib, engine), [Part(plan)], factors=factors or {}))
    assert outcome.status == "ok", outcome.error
    return run


@pytest.fixture(scope="module")
def p2p(cli, tmp_path_factory) -> dict[str, Run]:
    d = tmp_path_factory.mktemp("p2p-runs")
    return {"both": cli_run(cli, d, "-b", "pingpong,bw", "--sizes", "1:16K", "--env", f"{ENV}=auto"),
            "binomial": cli_run(cli, d, "-b", "pingpong", "--sizes", "1:16K", "--env", f"{ENV}=binomial")}


@pytest.fixture(scope="module")
def coll(embedded_mpi, mpich_engine, tmp_path_factory) -> Run:
    return api_run(embedded_mpi, mpich_engine, tmp_path_factory.mktemp("coll"), ["allreduce", "barrier"],
                   "0,4:1K:*4", ["--npmin", "1"])


@pytest.fixture(scope="module")
def ring(embedded_mpi, mpich_engine, tmp_path_factory) -> list[Run]:
    """The ring study's layout: algorithms balanced and imbalanced, algorithm 5 per nblock with
    run.json factors."""
    d = tmp_path_factory.mktemp("ring")
    algs = ["ringcs2", "ringcs3", "ringcs4", "ringcs5"]
    runs = [api_run(embedded_mpi, mpich_engine, d, algs, "8:8K:*4", ["--ncompute", "0"]),
            api_run(embedded_mpi, mpich_engine, d, algs, "8:8K:*4", ["--ncompute", "1,4"])]
    for nblock in (128, 1024):
        runs.append(api_run(embedded_mpi, mpich_engine, d, ["ringcs5"], "2K,8K",
                            ["--ncompute", "1,4", "--nblock", str(nblock)],
                            {"algorithm": "5", "load": "imbalanced", "nblock": str(nblock)}))
    return runs


def gids(ax, gid: str) -> list:
    return [a for a in [*ax.lines, *ax.collections] if a.get_gid() == gid]


def legend_texts(legend) -> list[str]:
    return [t.get_text() for t in legend.get_texts()]


def tick_texts(fig, ax) -> list[str]:
    fig.canvas.draw()
    return [t.get_text() for t in ax.get_xticklabels() if t.get_text()]


def test_latency_plot_has_log_axes_bands_and_models(p2p):
    df = tidy([p2p["both"]])
    models = plots.fit_models(df)
    fig = plots.latency_plot(df, models)
    ax = fig.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert ax.get_xlabel() == "message size (bytes)" and "µs" in ax.get_ylabel()
    assert {"1K", "4K"} <= set(tick_texts(fig, ax))
    assert len(gids(ax, "series")) == 2 and len(gids(ax, "ci-band")) == 2
    labels = legend_texts(ax.get_legend())
    assert labels[:2] == ["bw", "pingpong"] and "95% CI of the median" in labels
    # one dashed line per fitted regime, one dotted line per switch, from the analysis itself
    assert len(gids(ax, "model")) == sum(len(m.report.regimes) for m in models if m.report)
    assert len(gids(ax, "switch")) == sum(len(m.report.switches) for m in models if m.report)
    ping = df[df["benchmark"] == "pingpong"].sort_values("size")
    line = next(ln for ln in gids(ax, "series") if ln.get_label() == "pingpong")
    assert list(line.get_xdata()) == list(ping["size"]) and list(line.get_ydata()) == list(ping["time_median_us"])


def test_bandwidth_plot_draws_the_engine_bandwidth(p2p, tmp_path):
    df = tidy([p2p["both"]])
    fig = plots.bandwidth_plot(df, path=tmp_path / "bw.svg")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "bandwidth (MB/s)" and ax.get_yscale() == "log"
    bw = df[df["benchmark"] == "bw"].sort_values("size")
    line = next(ln for ln in gids(ax, "series") if ln.get_label() == "bw")
    assert list(line.get_ydata()) == pytest.approx(list(bw["bw_median_MBps"]))
    assert len(gids(ax, "ci-band")) == 2
    assert (tmp_path / "bw.svg").read_text().lstrip().startswith("<?xml")


def test_legend_names_only_the_factor_that_differs(p2p):
    df = tidy(list(p2p.values()))
    fig = plots.latency_plot(df[df["benchmark"] == "pingpong"])
    labels = [ln.get_label() for ln in gids(fig.axes[0], "series")]
    assert labels == [f"{ENV}=auto", f"{ENV}=binomial"]


def test_repeated_configuration_is_told_apart_by_run_id(p2p):
    df = tidy([p2p["binomial"]])
    again = df.assign(run_id="repeat")
    fig = plots.latency_plot(pd.concat([df, again]))
    labels = sorted(ln.get_label() for ln in gids(fig.axes[0], "series"))
    assert labels == [f"run {p2p['binomial'].id}", "run repeat"]


def test_collectives_against_size_and_rank_count(coll):
    df = tidy([coll])
    fig = plots.collective_size_plot(df)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in visible] == ["allreduce"]  # barrier has no size > 0
    assert legend_texts(fig.legends[0]) == ["1 rank", "2 ranks"]
    assert len(gids(visible[0], "ci-band")) == 2

    fig = plots.collective_ranks_plot(df)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in visible] == ["allreduce", "barrier"]
    assert all(ax.get_xlabel() == "ranks" for ax in visible)
    assert list(visible[0].get_xticks()) == [1, 2]
    # one legend for the figure (issue 31: it was one per panel), and one time axis per row
    assert all(ax.get_legend() is None for ax in visible) and len(fig.legends) == 1
    assert "0 B" in legend_texts(fig.legends[0])
    assert visible[0].get_shared_y_axes().joined(visible[0], visible[1])
    for ln in gids(visible[0], "series"):
        assert list(ln.get_xdata()) == [1, 2]


def test_ring_study_figures(ring):
    df = tidy(ring)
    fig = plots.ring_size_plot(df)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in visible] == ["balanced load", "imbalanced load"]
    assert legend_texts(fig.legends[0]) == ["2: Sendrecv_replace", "3: Sendrecv, double buffer",
                                            "4: Isend/Irecv, Waitall", "5: Isend/Irecv, Testall"]
    assert "incl. computation" in visible[0].get_ylabel()
    # the nblock series are left out of the size figure: algorithm 5 is one line per panel
    assert len(gids(visible[1], "series")) == 4

    fig = plots.ring_nblock_plot(df)
    ax = fig.axes[0]
    assert "nblock" in ax.get_xlabel()
    lines = gids(ax, "series")
    assert [ln.get_label() for ln in lines] == ["2 KiB", "8 KiB"]
    assert all(list(ln.get_xdata()) == [128, 1024] for ln in lines)


def test_ring_figures_from_tags_in_the_records(ring):
    """The study may instead keep every series in one run and tag the points (algorithm, load,
    nblock, series): the same figures come out."""
    df = tidy(ring)
    df = df.assign(algorithm=df["benchmark"].str[-1], load=df["factor_load"].fillna(
        df["opt_ncompute_a"].ne(df["opt_ncompute_b"]).map({False: "balanced", True: "imbalanced"})),
        nblock=df["factor_nblock"], run_id="one")
    df["series"] = df["algorithm"] + df["load"] + df["nblock"].astype(str)
    df = df.drop(columns=[c for c in df if c.startswith("factor_")])
    # the records carry the tags too: the launch level tells a run's series apart by them
    tags = df[["algorithm", "load", "nblock", "series"]].to_dict("records")
    df["point"] = [dataclasses.replace(p, tag={**p.tag, **{k: v for k, v in t.items() if isinstance(v, str)}})
                   for p, t in zip(df["point"], tags)]
    fig = plots.ring_size_plot(df)
    assert len(fig.legends[0].get_texts()) == 4
    assert [len(gids(ax, "series")) for ax in fig.axes] == [4, 4]
    lines = gids(plots.ring_nblock_plot(df).axes[0], "series")
    assert [ln.get_label() for ln in lines] == ["2 KiB", "8 KiB"]


def test_pair_matrix_heat_map():
    m = [[None if i == j else 1.0 + i + 10 * j for j in range(4)] for i in range(4)]
    fig = plots.matrix_plot(m, unit="MB/s", title="pairs")
    ax = fig.axes[0]
    image = next(im for im in ax.images if im.get_gid() == "matrix")
    assert image.get_array().shape == (4, 4) and image.get_array().mask.sum() == 4  # the diagonal
    assert fig.axes[1].get_ylabel() == "MB/s"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("receiving rank", "sending rank")
    assert sorted(t.get_text() for t in ax.texts) == sorted(f"{v:.3g}" for row in m for v in row if v)
    # a pairs point's map (here one mode of the two the engine writes), and a point without one
    rec = Point("pairs", 1024, 4, Stats(n=10, median=1.0), details={"pair_map": {"one_pair": {"matrix_us": m}}})
    plain = Point("pingpong", 1, 2, Stats(n=1, median=1.0))
    found = plots.all_plots(pd.DataFrame({"run_id": ["r1", "r1"], "point": [rec, plain]}))
    assert [p.name for p in found] == ["matrix-pairs-1024"]
    assert found[0].title.startswith("pairs 1 KiB")
    with pytest.raises(ValueError, match="square"):
        plots.matrix_plot([[1, 2, 3], [4, 5, 6]])


def test_all_plots_picks_what_applies(p2p, coll):
    names = [p.name for p in plots.all_plots(tidy([p2p["both"], coll]))]
    assert names == ["latency", "bandwidth", "collectives-size", "collectives-ranks"]


def test_plot_command_writes_every_plot(cli, p2p, coll, tmp_path):
    r = cli("plot", str(p2p["both"].path), str(coll.path), "-o", str(tmp_path / "svg"), "--format", "svg")
    assert r.returncode == 0, r.stderr
    paths = [Path(line) for line in r.stdout.split()]
    assert [p.name for p in paths] == ["latency.svg", "bandwidth.svg", "collectives-size.svg",
                                       "collectives-ranks.svg"]
    assert all("<svg" in p.read_text() for p in paths)
    r = cli("plot", str(p2p["both"].path), "-o", str(tmp_path / "png"))
    assert r.returncode == 0, r.stderr
    assert all(Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in r.stdout.split())


def test_plot_command_bad_input_is_one_line(cli_offline, tmp_path):
    r = cli_offline("plot", "no-such-run", "--runs-dir", str(tmp_path))
    assert r.returncode == 2 and r.stderr.startswith("mpiscope: error: ") and "Traceback" not in r.stderr
    r = cli_offline("plot", str(tmp_path))
    assert r.returncode == 2 and "holds no runs" in r.stderr
