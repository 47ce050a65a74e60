"""`hpn-testbed clean` after a run that could not clean up (SIGKILL): all of it goes, nothing else."""
import os
import signal
import subprocess
import sys

import pytest

from testbed.core import sh
from testbed.core.wait import wait_for
from testbed.emulation import cpu_precedence
from testbed.emulation.net import netdevs
from testbed.emulation.run import runstate

pytestmark = pytest.mark.integration
FOREIGN = "hpntestforeign0"   # a bridge this test makes itself, standing in for the user's own


def ovs_cpu_settings() -> dict[int, tuple[str, int]]:
    """Each thread of Open vSwitch's daemons: its cgroups and nice value (cpu_precedence.py)."""
    return {tid: (open(f"/proc/{pid}/task/{tid}/cgroup").read(), os.getpriority(os.PRIO_PROCESS, tid))
            for pid in cpu_precedence.daemons().values() for tid in cpu_precedence.threads(pid)}


def test_clean_removes_a_killed_run_and_only_that():
    ovs_before = ovs_cpu_settings()
    sh.run(["ovs-vsctl", "--may-exist", "add-br", FOREIGN, "--", "set", "bridge", FOREIGN,
            "datapath_type=netdev"])
    proc = subprocess.Popen([sys.executable, "-m", "testbed", "up", "mrft"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # wait until the run is fully up (it says so on stderr), then kill it without mercy
        for line in proc.stdout:
            if "press Ctrl-C" in line:
                break
        [state] = [s for s in runstate.runs() if s.data["owner"][0] == proc.pid]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        left_pids = state.live_processes()
        assert left_pids, "a killed run leaves its controller and node shells behind"
        assert netdevs.tagged_bridges(state.run_id)

        out = subprocess.run([sys.executable, "-m", "testbed", "clean"], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        wait_for("the killed run's processes to end",
                 lambda: not state.live_processes(), 10)
        assert not netdevs.tagged_bridges(state.run_id)
        names = set(os.listdir("/sys/class/net"))
        assert not [i for i in state.data["root_intfs"] if i in names]
        assert not state.dir.exists()
        assert FOREIGN in netdevs.all_bridges()      # not ours: untouched
        groups = [k[len(cpu_precedence.GROUP):] for k in state.data["knobs"]
                  if k.startswith(cpu_precedence.GROUP)]
        assert not [g for g in groups if os.path.exists(g)], "the run's cgroup is left"
        after = ovs_cpu_settings()          # threads come and go with the bridges: compare the lasting
        assert {t: after[t] for t in after.keys() & ovs_before} == \
            {t: ovs_before[t] for t in after.keys() & ovs_before}
    finally:
        if proc.poll() is None:
            proc.kill()
        sh.run(["ovs-vsctl", "--if-exists", "del-br", FOREIGN])


@pytest.fixture
def veths():
    """Veth pairs this test makes itself: two to delete and a bystander that must stay."""
    names = ["hpntestv0", "hpntestv1", "hpntestby"]
    for n in names:
        sh.run(["ip", "link", "add", n, "type", "veth", "peer", "name", n + "p"])
    yield names
    sh.run("ip -force -batch - 2>/dev/null || true", check=False,
           input="".join(f"link del {n}\n" for n in names))


def exists(name):
    return os.path.exists(f"/sys/class/net/{name}")


def test_delete_links_removes_the_pairs_named_and_nothing_else(veths):
    ours, bystander = veths[:2], veths[2]
    assert netdevs.delete_links(ours + ["hpntestgone"]) == 2   # a missing name is no error
    assert not any(exists(n) or exists(n + "p") for n in ours)
    assert exists(bystander) and exists(bystander + "p")


def test_delete_links_spares_a_foreign_interface_in_its_link_group(veths, monkeypatch):
    ours, bystander = veths[:2], veths[2]
    group = netdevs._GROUP_BASE + 511
    sh.run(["ip", "link", "set", "dev", bystander, "group", str(group)])   # already in the group
    monkeypatch.setattr(netdevs, "_unused_link_group", lambda: group)
    assert netdevs.delete_links(ours) == 2
    assert not any(exists(n) for n in ours)
    assert exists(bystander) and exists(bystander + "p")
