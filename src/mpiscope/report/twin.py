"""The twin's platform file as SimGrid reads it (analysis/calibrate/platform.py's `Twin`): SMPI's
configuration in its `<config>`, and the provenance in comments: the source runs, every fitted
parameter with its interval, the mpiscope version, the validation's summary, and one
machine-readable line (the twin's record) that `calibrate --validate` reads back."""
from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Mapping, Sequence
from xml.sax.saxutils import quoteattr

from mpiscope.analysis.calibrate.platform import MARK

if TYPE_CHECKING:
    from mpiscope.analysis.calibrate.fit import Figure
    from mpiscope.analysis.calibrate.platform import Twin


def twin_xml(twin: "Twin", validation: str = "", table: Sequence[Mapping] = ()) -> str:
    """The platform file; `validation` the summary and `table` the rows of the validation table
    (report/calibrate.py's `validation_rows`), which the record keeps for the HTML report."""
    doc = twin.platform().xml()
    doc = re.sub(r"<!-- mpiscope .*? -->\n", "", doc, count=1)
    props = "".join(f'  <prop id={quoteattr(k)} value={quoteattr(v)}/>\n'
                    for k, v in (c.split(":", 1) for c in twin.cfg()))
    head = "".join(f"<!-- {_comment(line)} -->\n" for line in provenance_lines(twin))
    if validation:
        head += "<!--\n" + _comment(validation) + "\n-->\n"
    record = {**twin.record(), **({"validation": [dict(r) for r in table]} if table else {})}
    head += f"<!-- {MARK} {_comment(json.dumps(record, separators=(',', ':'), default=str))} -->\n"
    return doc.replace('<platform version="4.1">\n', f'<platform version="4.1">\n{head}<config>\n{props}</config>\n', 1)


def provenance_lines(twin: "Twin") -> list[str]:
    """Where the twin comes from and what was fitted, a line each: the runs, the shape, SMPI's
    options, then each link class and its regimes with their intervals."""
    lines = [f"a twin calibrated by mpiscope {twin.version} from runs {', '.join(twin.runs)} ({twin.library})",
             f"shape: {twin.description}",
             f"smpirun options: " + " ".join(f"cfg={c}" for c in twin.cfg())]
    for c in filter(None, (twin.link, twin.loopback)):
        lines.append(f"{c.placement}: route latency {_fig(c.latency_us, 'us')}, bandwidth "
                     f"{_fig(c.bandwidth_Bps.scaled(1e-6), 'MB/s')}; fitted sizes {_sizes(c.fitted)}, "
                     f"held out {_sizes(c.held_out) or 'none'}")
        for r in c.regimes:
            lines.append(f"  {c.placement} regime {r.sizes[0]}..{r.sizes[1]} B (factor above {r.above} B): "
                         f"latency {_fig(r.latency_us, 'us')}, bandwidth {_fig(r.bandwidth_Bps.scaled(1e-6), 'MB/s')}, "
                         f"lat-factor {_fig(r.lat_factor, '')}, bw-factor {_fig(r.bw_factor, '')}")
    return lines


def _fig(f: "Figure", unit: str) -> str:
    interval = f" [{f.low:.4g}, {f.high:.4g}]" if math.isfinite(f.low) and math.isfinite(f.high) else ""
    return f"{f.value:.4g}{' ' + unit if unit else ''}{interval}"


def _sizes(sizes: tuple[int, ...]) -> str:
    return ",".join(str(s) for s in sizes)


def _comment(text: str) -> str:
    """Text a comment may hold: XML forbids "--" inside one (JSON keeps it as an escape)."""
    return text.replace("--", "-\\u002d")
