"""Routing policies: static per destination (claim C12)."""
import random

import pytest

from testbed.model import make_fabric
from testbed.model import policies as P


def permutation(fab, seed):
    """A random permutation traffic matrix within each set of mutually reachable NICs (MPFT's
    planes are disjoint), without a host sending to itself."""
    rng = random.Random(seed)
    classes = []
    for nic in fab.nics():
        home = next((c for c in classes if fab.reachable(c[0], nic)), None)
        (home.append(nic) if home else classes.append([nic]))
    matrix = []
    for nics in classes:
        perm = nics[:]
        rng.shuffle(perm)
        matrix += [(a.ip, b.ip) for a, b in zip(nics, perm) if a.host != b.host]
    return matrix


STATIC_FABRICS = [("mpft", {}), ("mpft", {"leaves": 4, "spines": 4, "hosts_per_leaf": 4}),
                  ("mrft", {"leaves": 4, "spines": 4, "hosts_per_leaf": 4}),
                  ("clos3", {}), ("clos3", {"cores": 4}), ("hpn", {})]


@pytest.mark.parametrize("family,settings", STATIC_FABRICS)
def test_static_routes_give_permutations_disjoint_links(family, settings):
    fab = make_fabric(family, settings)
    routes = P.all_routes(fab)
    core = P.core_rules(fab, routes) if family == "hpn" else []
    for seed in range(10):
        matrix = permutation(fab, seed)
        static = P.static_routes(fab, routes, matrix, core)
        # one port per destination everywhere (only per-port core rules still look at in_port)
        assert all(len(r.ports) == 1 for r in static)
        paths = P.matrix_paths(fab, static, matrix, core)
        assert all(paths[(s, d)] for s, d in matrix)
        assert P.shared_links(fab, paths) == {}, (seed, matrix)
        assert P.static_routes(fab, routes, matrix, core) == static   # deterministic


def test_static_without_matrix_is_destination_index_modulo_ports():
    fab = make_fabric("mpft", {"leaves": 4, "spines": 4, "hosts_per_leaf": 4, "planes": 1})
    routes = P.all_routes(fab)
    chosen = P.static_choices(fab, routes)
    for r in routes:
        if len(r.ports) > 1:
            assert chosen[(r.switch, r.ip)] == r.ports[P.destination_index(fab, r.ip) % len(r.ports)]
    # so the hosts of one leaf are reached over different spines: their downlinks never collide
    spines = {chosen[("pl0l0", n.ip)] for n in fab.nics() if n.host.startswith("g1h")}
    assert len(spines) == 4


def test_ecmp_like_placement_collides_where_static_does_not():
    """The matrix flows through the hash-free modulo placement share links; static does not."""
    fab = make_fabric("mpft", {"leaves": 8, "spines": 8, "hosts_per_leaf": 8, "planes": 1})
    routes = P.all_routes(fab)
    matrix = permutation(fab, 2)
    modulo = P.matrix_paths(fab, P.static_routes(fab, routes, []), matrix)
    assert P.shared_links(fab, modulo)
    static = P.matrix_paths(fab, P.static_routes(fab, routes, matrix), matrix)
    assert not P.shared_links(fab, static)


def test_static_survives_a_down_link():
    fab = make_fabric("mpft")
    l = next(l for l in fab.switch_links() if l.a == "pl0l0")
    down = frozenset({(l.a, l.a_port), (l.b, l.b_port)})
    routes = P.all_routes(fab, down)
    matrix = [("g0h0-n0", "g1h0-n0")]
    static = P.static_routes(fab, routes, matrix)
    hops = P.matrix_paths(fab, static, matrix)[("10.0.0.1", "10.0.1.1")]
    assert hops and (l.a, l.a_port) not in [(h.switch, h.out_port) for h in hops]
