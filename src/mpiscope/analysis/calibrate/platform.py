"""The twin as SimGrid reads it: a platform of the given shape whose links carry the fitted route
figures, SMPI's configuration in its `<config>` (the same options as `--cfg`), and the provenance
in comments: the source runs, every fitted parameter with its interval, the mpiscope version, and
one machine-readable line that `calibrate --validate` reads back."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence
from xml.sax.saxutils import quoteattr

from mpiscope.analysis.calibrate.fit import Figure, LinkClass
from mpiscope.launchers.platform import Platform, parse

MARK = "mpiscope-twin"
# The collective selector of SimGrid that follows each measured library's rules.
SELECTORS = {"Open MPI": "ompi"}
DEFAULT_SELECTOR = "mpich"  # MPICH and its derivatives (Intel MPI, MVAPICH, Cray), and SMPI's adapter default


@dataclass(frozen=True)
class Twin:
    link: LinkClass               # what every link carries: inter-node, else the one class measured
    loopback: LinkClass | None    # intra-node, when inter-node was measured too: SimGrid's loopback
    topology: str                 # the shape: a platform description without bw and lat
    nodes: int
    selector: str
    library: str
    runs: tuple[str, ...]
    version: str

    def cfg(self) -> list[str]:
        """SMPI's configuration, KEY:VALUE each (`--cfg=` of smpirun, `<prop>` of the platform)."""
        out = [f"smpi/lat-factor:{self.link.factors('lat')}", f"smpi/bw-factor:{self.link.factors('bw')}",
               f"smpi/coll-selector:{self.selector}"]
        eager = self.link.eager_bytes
        if eager is not None:  # both strict: a message below the threshold goes eagerly
            out += [f"smpi/async-small-thresh:{eager + 1}", f"smpi/send-is-detached-thresh:{eager + 1}"]
        if self.loopback is not None:
            out += [f"network/loopback-lat:{self.loopback.latency_us.value * 1e-6:.6g}",
                    f"network/loopback-bw:{self.loopback.bandwidth_Bps.value:.6g}"]
        return out

    @property
    def description(self) -> str:
        """The platform description (launchers/platform.py) with the fitted figures: each route
        crosses two links (node to switch, switch to node), so a link is half the route latency."""
        kind, _, rest = self.topology.partition(":")
        keys = dict(item.split("=", 1) for item in rest.split(",") if item)
        bw = self.link.bandwidth_Bps.value
        keys.update(nodes=str(self.nodes), bw=f"{bw:.6g}Bps", lat=f"{self.link.latency_us.value / 2:.6g}us")
        if kind == "cluster":
            keys.setdefault("bb-bw", f"{bw * self.nodes:.6g}Bps")  # no contention beyond the links unless given
            keys.setdefault("bb-lat", "0us")
        routers, per = keys.get("routers", "4"), keys.get("per-router", "2")
        if kind == "dragonfly" and routers.isdigit() and per.isdigit() and int(routers) * int(per) > 0:
            keys.pop("nodes")  # its node count follows from groups x routers x per-router
            keys.setdefault("groups", str(-(-self.nodes // (int(routers) * int(per)))))
        return kind + ":" + ",".join(f"{k}={v}" for k, v in keys.items())

    def platform(self) -> Platform:
        return parse(self.description, 1)

    def hosts(self) -> list[str]:
        return self.platform().hosts()

    def xml(self, validation: str = "", table: Sequence[Mapping] = ()) -> str:
        """The platform file; `validation` the summary and `table` the rows of the validation
        table (analysis/calibrate/validation.py), which the record keeps for the HTML report."""
        doc = self.platform().xml()
        doc = re.sub(r"<!-- mpiscope .*? -->\n", "", doc, count=1)
        props = "".join(f'  <prop id={quoteattr(k)} value={quoteattr(v)}/>\n'
                        for k, v in (c.split(":", 1) for c in self.cfg()))
        head = "".join(f"<!-- {_comment(line)} -->\n" for line in self.provenance_lines())
        if validation:
            head += "<!--\n" + _comment(validation) + "\n-->\n"
        record = {**self.record(), **({"validation": [dict(r) for r in table]} if table else {})}
        head += f"<!-- {MARK} {_comment(json.dumps(record, separators=(',', ':'), default=str))} -->\n"
        return doc.replace('<platform version="4.1">\n', f'<platform version="4.1">\n{head}<config>\n{props}</config>\n', 1)

    def provenance_lines(self) -> list[str]:
        lines = [f"a twin calibrated by mpiscope {self.version} from runs {', '.join(self.runs)} ({self.library})",
                 f"shape: {self.description}",
                 f"smpirun options: " + " ".join(f"cfg={c}" for c in self.cfg())]
        for c in filter(None, (self.link, self.loopback)):
            lines.append(f"{c.placement}: route latency {_fig(c.latency_us, 'us')}, bandwidth "
                         f"{_fig(c.bandwidth_Bps.scaled(1e-6), 'MB/s')}; fitted sizes {_sizes(c.fitted)}, "
                         f"held out {_sizes(c.held_out) or 'none'}")
            for r in c.regimes:
                lines.append(f"  {c.placement} regime {r.sizes[0]}..{r.sizes[1]} B (factor above {r.above} B): "
                             f"latency {_fig(r.latency_us, 'us')}, bandwidth {_fig(r.bandwidth_Bps.scaled(1e-6), 'MB/s')}, "
                             f"lat-factor {_fig(r.lat_factor, '')}, bw-factor {_fig(r.bw_factor, '')}")
        return lines

    def record(self) -> dict:
        return {"version": self.version, "runs": list(self.runs), "library": self.library, "nodes": self.nodes,
                "description": self.description, "cfg": self.cfg(),
                "held_out": {c.placement: list(c.held_out) for c in filter(None, (self.link, self.loopback))},
                "fitted": {c.placement: list(c.fitted) for c in filter(None, (self.link, self.loopback))}}


def _fig(f: Figure, unit: str) -> str:
    interval = f" [{f.low:.4g}, {f.high:.4g}]" if math.isfinite(f.low) and math.isfinite(f.high) else ""
    return f"{f.value:.4g}{' ' + unit if unit else ''}{interval}"


def _sizes(sizes: tuple[int, ...]) -> str:
    return ",".join(str(s) for s in sizes)


def _comment(text: str) -> str:
    """Text a comment may hold: XML forbids "--" inside one (JSON keeps it as an escape)."""
    return text.replace("--", "-\\u002d")


def read_twin(path: Path) -> dict | None:
    """The record a calibrated platform carries, None for another platform file."""
    m = re.search(rf"<!-- {MARK} (\{{.*\}}) -->", path.read_text(errors="replace"))
    if not m:
        return None
    try:
        rec = json.loads(m.group(1))
    except ValueError:
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("cfg"), list) else None


def selector_of(vendor: str) -> str:
    return SELECTORS.get(vendor, DEFAULT_SELECTOR)
