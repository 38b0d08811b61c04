"""tune's result as a table and a bar plot in the terminal, and as tune.html (with a figure per
collective, report/tune_plot.py): per collective and rank count, the algorithm chosen for each
size band and the gain over the default."""
from __future__ import annotations

import html
from pathlib import Path
from typing import Iterable

from rich.console import Console
from rich.table import Table

from mpiscope.analysis.tune import KEEP, MEASURE, Ratio
from mpiscope.analysis.policy import ANALYSIS
from mpiscope.mpi.collectives import DEFAULT
from mpiscope.analysis.tunefile import Band, Clash
from mpiscope.analysis.tunelayers import BELOW, FALLBACK, MISSING, OTHER, SEGMENTS, SETUP, TIMED, UNABLE, \
    UNREAD, LevelProof
from mpiscope.util.atomic import write_atomic
from mpiscope.util.units import human_size as fmt_bytes


def settle_reason(r: Ratio, what: str) -> str:
    """Why a change was kept, is measured further or withdrawn (`what`, analysis.tune.settle's)."""
    done = min(r.launches)
    if what == KEEP:
        return f"faster in {done} launches a side"
    if what == MEASURE:
        return f"inconclusive after {done} launches a side"
    return {"slower": "slower than the default", "same": "the same as the default (within the margin)"}.get(
        r.verdict, f"inconclusive after {done} launches a side"
        + (f" (about {r.needed} would decide it at this noise)" if r.needed else " (no number of launches would "
                                                                                    "decide it at this noise)"))


def control_reason(c: dict) -> str:
    """Why a kept change was withdrawn: the control of its rank count `c` (a side-by-side row) moved."""
    return (f"a control moved: {c['collective']} at {c['size']} B, the default on both sides, read "
            f"{c['ratio']:.3g} ({c['verdict']}), so this gain is not told apart from the machine's drift")


def band_choice(b: Band) -> str:
    """A band's choice as a clash names it: the algorithm with the value the file holds and its
    parameters, which may be all two rank counts' choices differ in."""
    if b.algorithm == DEFAULT:
        return b.algorithm
    detail = [b.value] if b.value and b.value not in b.algorithm else []  # han: the name holds it
    detail += [f"{k}={v}" for k, v in b.params]
    return f"{b.algorithm} ({', '.join(detail)})" if detail else b.algorithm


def clash_reason(c: Clash, nodes: int) -> str:
    """Why a change was withdrawn before the file was written: its band is one the format shares
    between rank counts on the same nodes (`tunefile.Clash`), and they chose differently there."""
    chose = ", ".join(f"{band_choice(b)} at {n}" for n, b in zip(c.ranks, c.choices))
    upto = f" up to {fmt_bytes(c.high)}" if c.high is not None else ""
    return (f"in the {c.file}, band {c.key} is one for {' and '.join(map(str, c.ranks))} ranks on {nodes} "
            f"node(s), and they chose differently there from {fmt_bytes(c.low)}{upto} ({chose})")


def clash_refusal(c: Clash, nodes: int) -> str:
    """The writer's refusal of a shared band `agree` could not settle (`tunefile.BandClash`)."""
    return (f"{c.collective}: {clash_reason(c, nodes)}: the file cannot hold both; tune these rank counts on "
            f"different node counts, or race one choice (--algorithms)")


def level_proof_text(p: LevelProof) -> str:
    """The evidence of a han level's proof (`analysis.tunelayers.han_level_proof`), quoting han's line."""
    forced = f"a rules file forcing {p.level}={p.component}, coll_han_verbose=80"
    sizes = ", ".join(str(s) for s in sorted({x.size for x in p.lookups}))
    own = f"han's and the engine's own calls, up to {ANALYSIS.han_setup_bytes} bytes"
    if p.case == UNREAD:
        return f"han did not say it read its rules file ({forced}): nothing is proven"
    if p.case == FALLBACK:
        f = p.fallbacks[0]
        why = {MISSING: f"found no module of {p.component} on the level's sub-communicator",
               UNABLE: f"found {p.component}'s module unable to run this collective"}[f.why]
        return (f"han's verbose output ({forced}) says it {why} and fell back to another component "
                f"({len(p.fallbacks)} line(s), e.g. \"{f.line}\"): the forced component does not serve "
                f"{p.collective}'s {p.level} level, so the timed calls do not consult it")
    if p.case == SETUP:
        return (f"the timed size, {p.timed} bytes, is within the sizes of {own}: a lookup there is not told "
                f"from theirs; tune a larger size to prove this level")
    if p.case in (TIMED, SEGMENTS):
        segments = (f" (the segments han cuts the timed {p.timed} bytes in: above {own})"
                    if p.case == SEGMENTS else f" (timed: {p.timed} bytes)")
        return (f"han's verbose output ({forced}) names the forced component for the timed calls: "
                f"{len(p.lookups)} lookup(s) of {p.collective} at its {p.level} level for {sizes}-byte messages"
                f"{segments}, e.g. \"{p.lookups[0].line}\"")
    if p.case == OTHER:
        named = ", ".join(sorted({x.component for x in p.lookups}))
        return (f"han's verbose output ({forced}) names {named}, not {p.component}, for the timed calls of "
                f"{p.collective} at its {p.level} level ({sizes}-byte messages), e.g. \"{p.lookups[0].line}\": "
                f"the forcing rule did not reach them")
    if p.case == BELOW:
        return (f"han's verbose output ({forced}) names {p.collective}'s {p.level} level only for {sizes}-byte "
                f"messages ({len(p.lookups)} line(s), {own}; the timed size is {p.timed} bytes), "
                f"e.g. \"{p.lookups[0].line}\": the timed calls do not consult this level")
    return (f"han's verbose output ({forced}) names no lookup of {p.collective} at its {p.level} level: the "
            f"timed calls do not consult it")


def _gain(row: dict | None) -> str:
    if not row:
        return "-"
    return f"{1 / row['ratio']:.2f}x [{1 / row['high']:.2f}, {1 / row['low']:.2f}] {row['verdict']}" \
        if row.get("low") == row.get("low") else f"{1 / row['ratio']:.2f}x {row['verdict']}"


def bands_table(rows: Iterable[tuple[str, int, int, str]], title: str, unit: str = "B") -> Table:
    """Rows (collective, ranks, from size, algorithm) as `--show` reads them back."""
    t = Table(title=title, title_justify="left")
    for col in ("collective", "ranks", f"from ({unit})", "algorithm"):
        t.add_column(col, justify="right" if col.startswith(("ranks", "from")) else "left")
    for coll, n, low, alg in rows:
        t.add_row(coll, str(n), fmt_bytes(low) if unit == "B" else str(low), alg)
    return t


def written(d: dict) -> str:
    """What the file holds at a decision's size; a change the side-by-side did not prove is
    named with the reason it was withdrawn."""
    return f"{d['chosen']} ({d['tried']} withdrawn: {d['withdrawn']})" if d.get("withdrawn") else d["chosen"]


def result_table(result: dict) -> Table:
    """Per collective, ranks and measured size: the race's leader, what was written (and what
    was withdrawn, why), and the side-by-side gain of the candidate file over the default (ratio
    default/tuned, interval, verdict)."""
    verify = {(v["collective"], v["ranks"], v["size"]): v for v in result.get("verify", [])}
    t = Table(title=f"tune: {result['library']}", title_justify="left")
    for col in ("collective", "ranks", "size", "fastest in race", "written", "gain over default (95% interval)"):
        t.add_column(col, justify="right" if col in ("ranks", "size") else "left")
    for d in result["decisions"]:
        v = verify.get((d["collective"], d["ranks"], d["size"]))
        t.add_row(d["collective"], str(d["ranks"]), fmt_bytes(d["size"]), d["leader"], written(d), _gain(v))
    return t


def gain_bars(result: dict, width: int = 40) -> list[str]:
    """A text bar per verified point: how much faster the file is than the default."""
    rows = result.get("verify", [])
    if not rows:
        return []
    top = max(max(1 / r["ratio"] for r in rows), 1.0)
    out = []
    for r in rows:
        g = 1 / r["ratio"]
        bar = "#" * max(1, round(width * g / top))
        out.append(f"{r['collective']:>14} {r['ranks']:>3} {fmt_bytes(r['size']):>8} {bar} {g:.2f}x {r['verdict']}")
    return out


def cost_line(c: dict) -> str:
    """What the race measured and took against every algorithm at every size in every round."""
    return (f"race: {c['point_launches']} point-launches of {c['exhaustive_point_launches']} for every algorithm at "
            f"every size in every round ({100 * c['share']:.0f} %), in {c['launches']} launches (exhaustive: "
            f"{c['exhaustive_launches']}; one launch per algorithm and collective: {c['unpacked_launches']}), "
            f"{c['seconds']:.0f} s")


def layer_lines(result: dict) -> list[str]:
    """Per collective the layer that serves it, and each knob's liveness with its evidence."""
    out = [f"{c}: served by {s['component']} ({s['layer']}): {s['why']}" for c, s in result.get("layers", {}).items()]
    for r in result.get("liveness", []):
        out.append(f"{r['collective']} at {r['ranks']} ranks, {r['knob']} {r['variable']}: "
                   f"{'live' if r['live'] else 'not live here, not raced'} ({r['evidence']})")
    for r in result.get("not_proven_live", []):  # each variable whose candidates are not raced, and why
        out.append(f"{r['collective']} at {r['ranks']} ranks, {r['variable']}: not proven live, not raced "
                   f"({', '.join(r['candidates'])}): {r['reason']}")
    return out + ([result["reaches"]] if result.get("reaches") else [])


def print_result(out: Console, result: dict) -> None:
    out.print(result_table(result))
    for line in layer_lines(result):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    bars = gain_bars(result)
    if bars:
        out.print("gain of the tuned file over the default (default time / tuned time):", highlight=False)
        for line in bars:
            out.print(line, highlight=False, markup=False)
    if result["cost"].get("share") is not None:
        out.print(cost_line(result["cost"]), highlight=False)
    if result.get("evidence"):
        out.print(result["evidence"], highlight=False)
    if result.get("canary"):
        c = result["canary"]
        out.print(f"the library reads the file: a copy naming an algorithm it lacks was "
                  f"{'refused' if c['refused'] else 'NOT refused'} ({c['collective']} at {c['ranks']} ranks)",
                  highlight=False)
    for what, why in result.get("left_out", {}).items():
        out.print(f"{what}: left out: {why}", highlight=False, markup=False)
    for coll, why in result.get("cannot", {}).items():
        out.print(f"{coll}: not tuned: {why}", highlight=False, markup=False)
    for key, why in result.get("failed", {}).items():
        coll, n, alg = key.split("|")
        out.print(f"{coll} at {n} ranks: {alg} did not run ({why})", highlight=False, markup=False)


def write_html(result: dict, path: Path) -> Path:
    """tune.html: per collective a figure (each algorithm's time per size, the written one marked,
    the gain over the default with its interval), then the table with the gain as a bar."""
    from mpiscope.report.html import _svg
    from mpiscope.report.tune_plot import tune_figures
    verify = {(v["collective"], v["ranks"], v["size"]): v for v in result.get("verify", [])}
    rows = []
    for d in result["decisions"]:
        v = verify.get((d["collective"], d["ranks"], d["size"]))
        gain = 1 / v["ratio"] if v else None
        bar = f'<div style="background:#4a8;width:{min(300, 150 * gain):.0f}px">&nbsp;</div>' if gain else ""
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in (
            d["collective"], d["ranks"], fmt_bytes(d["size"]), d["leader"], written(d), _gain(v))) + f"<td>{bar}</td></tr>")
    figures = "".join(f'<figure><img alt="{html.escape(caption)}" src="data:image/svg+xml;base64,{_svg(fig)}">'
                      f"<figcaption>{html.escape(caption)}</figcaption></figure>"
                      for caption, fig in tune_figures(result))
    env = "<br>".join(html.escape(f"export {k}={v}") for k, v in result["env"].items())
    cost = f"<p>{html.escape(cost_line(result['cost']))}</p>" if result["cost"].get("share") is not None else ""
    cost += "".join(f"<p>{html.escape(line)}</p>" for line in layer_lines(result))
    text = (f"<!doctype html><html><head><meta charset='utf-8'><title>mpiscope tune</title></head><body>"
            f"<h1>tune: {html.escape(result['library'])}</h1><p>file: {html.escape(result['file'])} "
            f"({html.escape(result['format'])})</p><p>{env}</p>{cost}{figures}<table border=1 cellpadding=3>"
            "<tr><th>collective</th><th>ranks</th><th>size</th><th>fastest in race</th><th>written</th>"
            "<th>gain over default</th><th></th></tr>" + "".join(rows) + "</table></body></html>\n")
    write_atomic(path, text)
    return path
