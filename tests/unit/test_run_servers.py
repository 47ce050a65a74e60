"""`run --servers`: which builder the scenarios get, and what is refused, without root."""
from testbed.cli import main
from testbed.emulation import factory
from testbed.emulation.cluster import site as cluster


class Built:
    def __init__(self, fabric, options=None, site=None):
        self.fabric, self.options, self.site = fabric, options, site


class Site:
    def __init__(self, fabric, servers):
        self.fabric, self.servers = fabric, servers


def test_scenarios_build_on_this_machine_unless_servers_are_chosen(monkeypatch):
    monkeypatch.setattr(factory, "Emulation", Built)
    monkeypatch.setattr(cluster, "ClusterSite", Site)
    assert factory.make_emulation("fab", "opts").site is None       # Emulation's default: here
    with factory.on_servers(["hpn-srv1", "hpn-srv2"]):
        emu = factory.make_emulation("fab", "opts")
        assert isinstance(emu.site, Site) and emu.site.servers == ("hpn-srv1", "hpn-srv2")
        assert emu.site.fabric == emu.fabric == "fab" and emu.options == "opts"
    assert factory.make_emulation("fab").site is None   # the block ended
    with factory.on_servers(None):
        assert factory.make_emulation("fab").site is None


def test_run_servers_refuses_experiment_files_and_a_count(tmp_path, capsys):
    assert main(["run", "experiments/x.toml", "--servers", "hpn-srv1,hpn-srv2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "experiment files" in err
    assert main(["run", "hash-polarization", "--servers", "2", "--out", str(tmp_path)]) == 2
    assert "name the servers" in capsys.readouterr().err
