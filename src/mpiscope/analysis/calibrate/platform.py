"""The twin as SimGrid reads it: a platform of the given shape whose links carry the fitted route
figures, SMPI's configuration (the same options as `--cfg`) and its provenance as a record (the
source runs, the fitted and held-out sizes, the mpiscope version). report/twin.py writes the file,
the record in one machine-readable comment that `read_twin` reads back."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from mpiscope.analysis.calibrate.fit import LinkClass
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

    def record(self) -> dict:
        return {"version": self.version, "runs": list(self.runs), "library": self.library, "nodes": self.nodes,
                "description": self.description, "cfg": self.cfg(),
                "held_out": {c.placement: list(c.held_out) for c in filter(None, (self.link, self.loopback))},
                "fitted": {c.placement: list(c.fitted) for c in filter(None, (self.link, self.loopback))}}


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
