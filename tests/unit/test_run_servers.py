"""`run --servers`: which builder the scenarios get, and what is refused, without root."""
from testbed.cli import main
from testbed.emulation import cluster


class Built:
    def __init__(self, fabric, options=None, servers=()):
        self.fabric, self.options, self.servers = fabric, options, servers


def test_scenarios_build_on_this_machine_unless_servers_are_chosen(monkeypatch):
    monkeypatch.setattr(cluster, "Emulation", type("Local", (Built,), {}))
    monkeypatch.setattr(cluster, "ClusterEmulation", type("Cluster", (Built,), {}))
    assert type(cluster.make_emulation("fab", "opts")).__name__ == "Local"
    with cluster.on_servers(["hpn-srv1", "hpn-srv2"]):
        emu = cluster.make_emulation("fab", "opts")
        assert type(emu).__name__ == "Cluster" and emu.servers == ("hpn-srv1", "hpn-srv2")
    assert type(cluster.make_emulation("fab")).__name__ == "Local"   # the block ended
    with cluster.on_servers(None):
        assert type(cluster.make_emulation("fab")).__name__ == "Local"


def test_run_servers_refuses_experiment_files_and_a_count(tmp_path, capsys):
    assert main(["run", "experiments/x.toml", "--servers", "hpn-srv1,hpn-srv2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "experiment files" in err
    assert main(["run", "hash-polarization", "--servers", "2", "--out", str(tmp_path)]) == 2
    assert "name the servers" in capsys.readouterr().err
