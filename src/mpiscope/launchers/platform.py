"""Simulated platforms for SimGrid's SMPI: a description such as
`cluster:nodes=64,bw=12.5GBps,lat=1us,slow-link=3` (or a SimGrid XML file) turned into the
platform XML and the hostfile smpirun reads. The grammar is in docs/simulation.md."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from mpiscope.launchers.zones import dragonfly, fattree
from mpiscope.util.errors import UsageError

KINDS = ("cluster", "fattree", "dragonfly")
BANDWIDTH = {"Bps": 1.0, "kBps": 1e3, "KBps": 1e3, "MBps": 1e6, "GBps": 1e9, "TBps": 1e12,
             "bps": 0.125, "kbps": 125.0, "Mbps": 1.25e5, "Gbps": 1.25e8, "Tbps": 1.25e11}
LATENCY = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
# Every key a description may hold, with its default ("" = none, or set from the rank count).
KEYS = {"nodes": "", "bw": "12.5GBps", "lat": "1us", "bb-bw": "100GBps", "bb-lat": "0us", "speed": "1Gf",
        "per-switch": "8", "top": "1", "groups": "", "routers": "4", "per-router": "2",
        "slow-link": "", "slow-node": "", "slowdown": "10"}
ONLY = {"cluster": {"bb-bw", "bb-lat"}, "fattree": {"per-switch", "top"},
        "dragonfly": {"groups", "routers", "per-router"}}


def _quantity(key: str, text: str, units: dict[str, float]) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)([A-Za-z]+)", text)
    if not m or m.group(2) not in units:
        raise UsageError(f"--platform {key}={text}: give a number and one of the units {', '.join(units)} "
                         f"(e.g. {KEYS[key]})")
    return float(m.group(1)) * units[m.group(2)]


def _whole(key: str, text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--platform {key}={text}: expects a whole number of at least 1")
    return int(text)


@dataclass
class Platform:
    """A described platform (kind and parameters), or `file` for a SimGrid XML file."""
    kind: str
    params: dict[str, str] = field(default_factory=dict)
    file: Path | None = None

    @property
    def description(self) -> str:
        if self.file:
            return str(self.file)
        return self.kind + ":" + ",".join(f"{k}={v}" for k, v in self.params.items())

    def hosts(self) -> list[str]:
        if self.file:
            return file_hosts(self.file)
        return [f"node-{i}" for i in range(int(self.params["nodes"]))]

    def xml(self) -> str:
        body = {"cluster": _cluster, "fattree": _fattree, "dragonfly": _dragonfly}[self.kind](self.params)
        return ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                f"<!-- mpiscope --platform {self.description} -->\n<platform version=\"4.1\">\n{body}</platform>\n")


def file_hosts(path: Path) -> list[str]:
    """The hosts a SimGrid platform file names, in its order: each `<host id>`, and each host of a
    `<cluster prefix radical suffix>` (radical "0-15,20"); a one-line UsageError when it is not
    XML or names none (hosts made by a zone's code are not seen: give --hostfile then)."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as e:
        raise UsageError(f"--platform {path}: not a readable XML file ({e}): give a SimGrid platform file") from None
    hosts = []
    for el in root.iter():
        if el.tag == "host" and el.get("id"):
            hosts.append(el.get("id", ""))
        elif el.tag == "cluster" and el.get("radical"):
            for span in el.get("radical", "").split(","):
                first, _, last = span.partition("-")
                if not first.strip().isdigit() or not (last or first).strip().isdigit():
                    raise UsageError(f"--platform {path}: cluster {el.get('id')}'s radical '{span}' is not N or N-M")
                hosts += [f"{el.get('prefix', '')}{i}{el.get('suffix', '')}"
                          for i in range(int(first), int(last or first) + 1)]
    if not hosts:
        raise UsageError(f"--platform {path}: names no <host> or <cluster> host: give --hostfile naming its hosts, "
                         f"one a line")
    return hosts


def parse(text: str, ranks: int) -> Platform:
    """The platform `text` names, its node count defaulting to one node per rank."""
    if Path(text).suffix == ".xml":
        p = Path(text)
        if not p.is_file():
            raise UsageError(f"--platform {text}: no such file; give a SimGrid platform XML file, or a "
                             f"description such as cluster:nodes=64,bw=12.5GBps,lat=1us")
        return Platform("file", file=p.resolve())
    kind, _, rest = text.partition(":")
    if kind not in KINDS:
        raise UsageError(f"--platform {text}: unknown platform '{kind}': use one of {', '.join(KINDS)} "
                         f"(e.g. fattree:nodes=64,per-switch=8), or a .xml file")
    given: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        other_kinds = other_keys(kind)
        if not eq or key not in KEYS or key in other_kinds:
            allowed = sorted(k for k in KEYS if k not in other_kinds)
            raise UsageError(f"--platform {text}: '{item}' is not KEY=VALUE with a key of {kind} "
                             f"({', '.join(allowed)})")
        if key in given:  # which one was meant cannot be known (as a repeated --env)
            raise UsageError(f"--platform {text}: {key} is given twice ({key}={given[key]}, {item}): give it once")
        given[key] = value
    params = {k: v for k, v in KEYS.items() if v and k not in other_keys(kind)}
    params.update(given)
    _check(kind, params, ranks)
    return Platform(kind, params)


def other_keys(kind: str) -> set[str]:
    """The keys that belong to the other kinds only."""
    return set().union(*(v for k, v in ONLY.items() if k != kind)) - ONLY[kind]


def _check(kind: str, p: dict[str, str], ranks: int) -> None:
    for key, units in (("bw", BANDWIDTH), ("bb-bw", BANDWIDTH), ("lat", LATENCY), ("bb-lat", LATENCY)):
        if key in p:
            _quantity(key, p[key], units)
    _flops(p["speed"])
    if kind == "cluster":
        p["nodes"] = p.get("nodes") or str(ranks)
        _whole("nodes", p["nodes"])
    elif kind == "fattree":
        per, top = _whole("per-switch", p["per-switch"]), _whole("top", p["top"])
        nodes = _whole("nodes", p.get("nodes") or str(ranks))
        if nodes % per:
            raise UsageError(f"--platform fattree: nodes={nodes} is not a multiple of per-switch={per}")
        p["nodes"], p["top"] = str(nodes), str(top)
    else:
        routers, per = _whole("routers", p["routers"]), _whole("per-router", p["per-router"])
        groups = _whole("groups", p.get("groups") or str(max(1, math.ceil(ranks / (routers * per)))))
        p["groups"] = str(groups)
        given = p.get("nodes")
        p["nodes"] = str(groups * routers * per)
        if given and given != p["nodes"]:
            raise UsageError(f"--platform dragonfly: nodes={given} but groups x routers x per-router = "
                             f"{p['nodes']}: leave nodes out, or change the others")
        if groups > routers:
            # router n of each group holds the global link to group n (SimGrid's DragonflyZone)
            raise UsageError(f"--platform dragonfly: groups={groups} but routers={routers}: each group needs a "
                             f"router per group; give routers={groups} or more, or more per-router nodes")
    nodes = int(p["nodes"])
    for key in ("slow-link", "slow-node"):
        if p.get(key) and (not p[key].isdigit() or int(p[key]) >= nodes):
            raise UsageError(f"--platform {key}={p[key]}: name a node from 0 to {nodes - 1}")
    if p.get("slow-link") or p.get("slow-node"):
        if not re.fullmatch(r"\d+(\.\d*)?", p["slowdown"]) or float(p["slowdown"]) <= 1:
            raise UsageError(f"--platform slowdown={p['slowdown']}: give the factor above 1 by which the "
                             f"slow link or node is slower (10)")
    else:
        p.pop("slowdown", None)
    if int(p["nodes"]) < ranks:
        # smpirun would deal two ranks to one simulated node: their messages then take its loopback
        raise UsageError(f"--platform {kind}: {p['nodes']} node(s) for {ranks} ranks: give nodes={ranks} or more")


def _unit_value(key: str, p: dict[str, str], units: dict[str, float], scale: float = 1.0) -> str:
    return f"{_quantity(key, p[key], units) * scale:.6g}"


def _cluster(p: dict[str, str]) -> str:
    """A star: one full-duplex link from each node to one switch (SimGrid's Cluster zone, with
    links written out so that one of them can be slow), and the switch's backbone."""
    nodes = int(p["nodes"])
    slow = float(p.get("slowdown", "1"))
    bad_link = int(p["slow-link"]) if p.get("slow-link") else -1
    bad_node = int(p["slow-node"]) if p.get("slow-node") else -1
    lines = ['<zone id="cluster" routing="Cluster">']
    for i in range(nodes):
        f = slow if i in (bad_link, bad_node) else 1.0
        speed = p["speed"] if i != bad_node else f"{_flops(p['speed']) / slow:.6g}f"
        lines.append(f' <host id="node-{i}" speed="{speed}"/>')
        lines.append(f' <link id="link-{i}" bandwidth="{_unit_value("bw", p, BANDWIDTH, 1 / f)}Bps" '
                     f'latency="{_unit_value("lat", p, LATENCY, f)}s" sharing_policy="SPLITDUPLEX"/>')
        lines.append(f' <host_link id="node-{i}" up="link-{i}_UP" down="link-{i}_DOWN"/>')
    lines.append(f' <backbone id="backbone" bandwidth="{_unit_value("bb-bw", p, BANDWIDTH)}Bps" '
                 f'latency="{_unit_value("bb-lat", p, LATENCY)}s"/>')
    lines.append("</zone>")
    return "\n".join(lines) + "\n"


def _flops(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d*)?)([kMGT]?)f", text)
    if not m:
        raise UsageError(f"--platform speed={text}: give flop/s such as 1Gf")
    return float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]


def _cluster_tag(p: dict[str, str], topology: str, parameters: str) -> str:
    return (f'<cluster id="{topology.lower()}" prefix="node-" suffix="" radical="0-{int(p["nodes"]) - 1}" '
            f'speed="{p["speed"]}" bw="{_unit_value("bw", p, BANDWIDTH)}Bps" lat="{_unit_value("lat", p, LATENCY)}s" '
            f'sharing_policy="SPLITDUPLEX" topology="{topology}" topo_parameters="{parameters}"/>\n')


def _figures(p: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A link's attributes, and the slow node's link's and speed (slowdown times slower)."""
    slow = float(p.get("slowdown", "1"))
    link = {"bandwidth": f"{_unit_value('bw', p, BANDWIDTH)}Bps", "latency": f"{_unit_value('lat', p, LATENCY)}s"}
    return link, {"bandwidth": f"{_unit_value('bw', p, BANDWIDTH, 1 / slow)}Bps",
                  "latency": f"{_unit_value('lat', p, LATENCY, slow)}s",
                  "speed": f"{_flops(p['speed']) / slow:.6g}f"}


def _fattree(p: dict[str, str]) -> str:
    """Two levels: per-switch nodes under each leaf switch, every leaf linked to each of `top`
    top switches (SimGrid's FAT_TREE "levels;down;up;link count"); written link by link when a
    fault is planted (zones.py)."""
    if p.get("slow-link") or p.get("slow-node"):
        return fattree(p, *_figures(p))
    per, leaves, top = int(p["per-switch"]), int(p["nodes"]) // int(p["per-switch"]), int(p["top"])
    return _cluster_tag(p, "FAT_TREE", f"2;{per},{leaves};1,{top};1,1")


def _dragonfly(p: dict[str, str]) -> str:
    """groups of routers (one chassis each), per-router nodes on each; one link between any two
    groups and between any two routers of a group (SimGrid's DRAGONFLY "G,L;C,L;R,L;N");
    written link by link when a fault is planted (zones.py)."""
    if p.get("slow-link") or p.get("slow-node"):
        return dragonfly(p, *_figures(p))
    return _cluster_tag(p, "DRAGONFLY", f"{p['groups']},1;1,1;{p['routers']},1;{p['per-router']}")


def write(platform: Platform, ranks: int, directory: Path) -> tuple[Path, Path | None]:
    """The platform XML and (for a described platform) its hostfile, one rank per node in order."""
    if platform.file:
        return platform.file, None
    directory.mkdir(parents=True, exist_ok=True)
    xml = directory / "platform.xml"
    hosts = directory / "hostfile"
    xml.write_text(platform.xml())
    hosts.write_text("\n".join(platform.hosts()[:max(ranks, 1)]) + "\n")
    return xml, hosts
