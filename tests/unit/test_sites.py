"""Where a fabric runs (testbed/emulation/site.py, cluster.py): both sites answer the same
questions with the same arguments, and a cluster site refuses what servers cannot do before
anything exists. No root, no servers."""
import inspect

import pytest

from testbed.core.errors import ParamError
from testbed.emulation.cluster.site import ClusterSite
from testbed.emulation.site import LocalSite
from testbed.model import make_fabric


def public(cls) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(f) for name, f in vars(cls).items()
            if inspect.isfunction(f) and not name.startswith("_")}


def test_both_sites_answer_every_question_alike():
    local, cluster = public(LocalSite), public(ClusterSite)
    missing = set(local) - set(cluster)
    assert not missing, f"ClusterSite does not answer {sorted(missing)}"
    differ = {n for n in local if [p.name for p in local[n].parameters.values()]
              != [p.name for p in cluster[n].parameters.values()]}
    assert not differ, f"different arguments: {sorted(differ)}"
    assert LocalSite.host_class and ClusterSite.host_class and ClusterSite.link_class


def test_a_cluster_site_runs_the_userspace_datapath_only():
    site = object.__new__(ClusterSite)      # no servers asked
    assert site.datapath(None) == site.datapath("netdev") == "netdev"
    with pytest.raises(ParamError, match="netdev"):
        site.datapath("system")


def test_this_machine_records_its_bridges_and_switch_side_interfaces():
    fab = make_fabric("hpn")
    site = LocalSite(fab)
    recorded: dict[str, list] = {}

    class State:
        data = {"about": {}}

        def add(self, key, *items):
            recorded.setdefault(key, []).extend(items)
    site.record(State())
    assert recorded["bridges"] == list(fab.switches)
    assert set(recorded["root_intfs"]) == ({l.b_intf for l in fab.links}
                                           | {l.a_intf for l in fab.switch_links()})
    assert site.carrier_follows(fab.links[0]) and site.describe(None) == {}
