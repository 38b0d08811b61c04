"""A fat tree or dragonfly written out link by link, so that one node's link can be slow.

SimGrid's cluster tag (FAT_TREE, DRAGONFLY) gives every link the same figures and seals its
links before a profile could change one. With a planted fault mpiscope writes the same
platform as zones instead: one `Cluster` zone per leaf switch (fat tree) or router (dragonfly)
holding its nodes and their links, and a `Full` zone routing between them over the switches'
links along the route SimGrid's zone takes. Every route crosses the same number of links of
the same figures as under the tag, so the healthy pairs measure the same.
"""
from __future__ import annotations

from collections.abc import Callable

# A hop between two switches: the link's id, and UP when taken from its first end to its second.
Hop = tuple[str, str]


def leaf_zones(p: dict[str, str], members: list[list[int]], name: Callable[[int], str], link: dict[str, str],
               slow: dict[str, str]) -> list[str]:
    """One Cluster zone per switch (zone z holds the nodes members[z]), its nodes' full-duplex
    links to it; `link` holds the bandwidth and latency attributes of a link, `slow` those of the
    slow node's."""
    bad = p.get("slow-link") or p.get("slow-node")
    lines = []
    for z, nodes in enumerate(members):
        lines.append(f' <zone id="{name(z)}" routing="Cluster">')
        lines.append(f'  <router id="{name(z)}-switch"/>')
        for i in nodes:
            figures = slow if bad and i == int(bad) else link
            speed = slow["speed"] if p.get("slow-node") and i == int(bad) else p["speed"]
            lines.append(f'  <host id="node-{i}" speed="{speed}"/>')
            lines.append(f'  <link id="link-{i}" bandwidth="{figures["bandwidth"]}" latency="{figures["latency"]}" '
                         f'sharing_policy="SPLITDUPLEX"/>')
            lines.append(f'  <host_link id="node-{i}" up="link-{i}_UP" down="link-{i}_DOWN"/>')
        lines.append(" </zone>")
    return lines


def routes(zones: int, name: Callable[[int], str], route: Callable[[int, int], list[Hop]]) -> list[str]:
    """A zoneRoute between every two switches' zones, through their switches."""
    lines = []
    for a in range(zones):
        for b in range(zones):
            if a != b:
                lines.append(f' <zoneRoute src="{name(a)}" dst="{name(b)}" gw_src="{name(a)}-switch" '
                             f'gw_dst="{name(b)}-switch" symmetrical="NO">')
                lines += [f'  <link_ctn id="{link}" direction="{way}"/>' for link, way in route(a, b)]
                lines.append(" </zoneRoute>")
    return lines


def fattree(p: dict[str, str], link: dict[str, str], slow: dict[str, str]) -> str:
    """Leaf switches of per-switch nodes, each linked to every one of `top` top switches; a
    route between two leaves goes up to top switch (destination node mod top) and down, as
    SimGrid's zone picks it (d-mod-k). A zoneRoute knows zones, not nodes: with top > 1 each
    leaf is written as `top` zones, its nodes by their index mod top, joined by a link of no
    latency and a thousand times the bandwidth (SimGrid forbids an empty route), which adds
    nothing to a route's time."""
    per, top = int(p["per-switch"]), int(p["top"])
    leaves = int(p["nodes"]) // per
    # zone z: (leaf, nodes' index mod top), the zones with no node left out
    zones = [(leaf, t) for leaf in range(leaves) for t in range(top)
             if any(i % top == t for i in range(leaf * per, (leaf + 1) * per))]
    members = [[i for i in range(leaf * per, (leaf + 1) * per) if i % top == t] for leaf, t in zones]
    name = ("leaf-{}".format if top == 1 else lambda z: "leaf-{}-{}".format(*zones[z]))
    lines = ['<zone id="fat_tree" routing="Full">', *leaf_zones(p, members, name, link, slow)]
    lines += [f' <link id="up-{leaf}-{t}" bandwidth="{link["bandwidth"]}" latency="{link["latency"]}" '
              f'sharing_policy="SPLITDUPLEX"/>' for leaf in range(leaves) for t in range(top)]
    if top > 1:
        wide = f'{1000 * float(link["bandwidth"].removesuffix("Bps")):.6g}Bps'
        lines += [f' <link id="fabric-{leaf}" bandwidth="{wide}" latency="0s" sharing_policy="SPLITDUPLEX"/>'
                  for leaf in range(leaves)]

    def route(a: int, b: int) -> list[Hop]:
        (la, ta), (lb, tb) = zones[a], zones[b]
        if la == lb:
            return [(f"fabric-{la}", "UP" if ta < tb else "DOWN")]
        return [(f"up-{la}-{tb}", "UP"), (f"up-{lb}-{tb}", "DOWN")]

    lines += routes(len(zones), name, route)
    return "\n".join([*lines, "</zone>"]) + "\n"


def dragonfly(p: dict[str, str], link: dict[str, str], slow: dict[str, str]) -> str:
    """Routers of one chassis per group, per-router nodes each; a local link between any two
    routers of a group, and router n of group g holds the global link to group n (SimGrid's
    DragonflyZone, minimal routing: to that router, across, to the destination's router)."""
    groups, routers, per = int(p["groups"]), int(p["routers"]), int(p["per-router"])
    name = "router-{}".format

    def local(g: int, a: int, b: int) -> Hop:
        return f"local-{g}-{min(a, b)}-{max(a, b)}", "UP" if a < b else "DOWN"

    def route(a: int, b: int) -> list[Hop]:
        (ga, ra), (gb, rb) = divmod(a, routers), divmod(b, routers)
        hops = []
        if ga != gb:
            if ra != gb:
                hops.append(local(ga, ra, gb))
            hops.append((f"global-{min(ga, gb)}-{max(ga, gb)}", "UP" if ga < gb else "DOWN"))
            ra = ga  # arrived at the router of group gb that holds the link to group ga
        if ra != rb:
            hops.append(local(gb, ra, rb))
        return hops

    figures = f'bandwidth="{link["bandwidth"]}" latency="{link["latency"]}" sharing_policy="SPLITDUPLEX"'
    members = [list(range(z * per, (z + 1) * per)) for z in range(int(p["nodes"]) // per)]
    lines = ['<zone id="dragonfly" routing="Full">', *leaf_zones(p, members, name, link, slow)]
    lines += [f' <link id="local-{g}-{a}-{b}" {figures}/>' for g in range(groups) for a in range(routers)
              for b in range(a + 1, routers)]
    lines += [f' <link id="global-{a}-{b}" {figures}/>' for a in range(groups) for b in range(a + 1, groups)]
    lines += routes(groups * routers, name, route)
    return "\n".join([*lines, "</zone>"]) + "\n"
