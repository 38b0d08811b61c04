"""Topology inference from a pair map recovers a known hierarchy from synthetic maps."""
from __future__ import annotations

import numpy as np
import pytest

from mpiscope.analysis.topology import infer_topology
from mpiscope.report.topology import topology_lines


def pair_map(n: int, time, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([[np.nan if a == b else time(a, b) * (1 + noise * rng.random()) for b in range(n)]
                     for a in range(n)])


def test_a_two_level_tree_gives_its_switches_then_everyone():
    t = infer_topology(pair_map(32, lambda a, b: 2.0 if a // 8 == b // 8 else 4.0, noise=0.05))
    assert [len(lv.groups) for lv in t.levels] == [4, 1]
    assert t.levels[0].groups == tuple(tuple(range(k, k + 8)) for k in range(0, 32, 8))
    assert t.levels[0].time_us == pytest.approx(2.0, rel=0.05)


def test_three_levels_and_ranks_dealt_round_robin():
    # ranks dealt cyclically over 4 switches of 2 groups: the groups are not runs of ranks
    switch = lambda r: r % 4
    t = infer_topology(pair_map(16, lambda a, b: 2.0 if switch(a) == switch(b) else
                                3.0 if switch(a) // 2 == switch(b) // 2 else 5.0, noise=0.02))
    assert t.group_sizes == [[4], [8], [16]]
    assert t.levels[0].groups[0] == (0, 4, 8, 12)
    assert "level 2: 2 group(s) of 8 rank(s)" in topology_lines(t)[1]


def test_one_host_is_one_level_and_a_slow_rank_stands_alone():
    assert len(infer_topology(pair_map(4, lambda a, b: 0.4, noise=0.1)).levels) == 1
    t = infer_topology(pair_map(8, lambda a, b: 20.0 if 5 in (a, b) else 2.0))
    assert t.levels[0].groups == ((0, 1, 2, 3, 4, 6, 7), (5,))


def dragonfly_links(groups: int, routers: int, per_router: int):
    """Links on SimGrid's minimal dragonfly route (router n of each group holds the global link
    to group n): node, a local hop to that router unless there, the global link, a local hop
    unless arrived, node."""
    def links(a: int, b: int) -> int:
        (ga, ra), (gb, rb) = divmod(a // per_router, routers), divmod(b // per_router, routers)
        if (ga, ra) == (gb, rb):
            return 2
        return 3 if ga == gb else 3 + (ra != gb) + (rb != ga)
    return links


@pytest.mark.parametrize("groups, routers, per_router", [(4, 4, 4), (2, 2, 2), (3, 4, 2)])
def test_a_dragonfly_gives_its_routers_then_its_groups(groups, routers, per_router):
    # a pair across groups whose routers hold the global link is as close (3 links) as two
    # routers of one group: latency alone cannot tell them, their shared neighbours can
    n = groups * routers * per_router
    links = dragonfly_links(groups, routers, per_router)
    t = infer_topology(pair_map(n, lambda a, b: 1.0 * links(a, b), noise=0.01))
    per_group = routers * per_router
    assert [lv.groups for lv in t.levels] == [
        tuple(tuple(range(k, k + per_router)) for k in range(0, n, per_router)),
        tuple(tuple(range(k, k + per_group)) for k in range(0, n, per_group)), (tuple(range(n)),)]


def test_a_level_that_differs_in_bandwidth_alone_is_found_with_the_bandwidth_map():
    # one latency everywhere; pairs across the two halves share an uplink of half the bandwidth
    us = pair_map(8, lambda a, b: 2.0, noise=0.01)
    mbps = pair_map(8, lambda a, b: 12500.0 if a // 4 == b // 4 else 6250.0, noise=0.01, seed=1)
    assert len(infer_topology(us).levels) == 1
    assert [lv.groups for lv in infer_topology(us, mbps).levels] == [((0, 1, 2, 3), (4, 5, 6, 7)),
                                                                     ((0, 1, 2, 3, 4, 5, 6, 7),)]


def test_a_map_with_a_missing_pair_is_refused():
    m = pair_map(3, lambda a, b: 1.0)
    m[0, 1] = m[1, 0] = np.nan
    with pytest.raises(ValueError, match="without a time"):
        infer_topology(m)
