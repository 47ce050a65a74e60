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


def test_scenarios_build_on_this_machine_unless_servers_are_named(monkeypatch):
    monkeypatch.setattr(factory, "Emulation", Built)
    monkeypatch.setattr(cluster, "ClusterSite", Site)
    monkeypatch.setattr(factory, "LocalSite", lambda fab: ("local", fab))
    assert factory.make_emulation("fab", "opts").site == ("local", "fab")      # no servers: here
    emu = factory.make_emulation("fab", "opts", servers=["hpn-srv1", "hpn-srv2"])
    assert isinstance(emu.site, Site) and emu.site.servers == ("hpn-srv1", "hpn-srv2")
    assert emu.site.fabric == emu.fabric == "fab" and emu.options == "opts"
    assert factory.make_emulation("fab", servers=None).site == ("local", "fab")   # no global state


def test_run_servers_gives_each_scenario_its_servers(monkeypatch):
    """`run --servers` reaches the scenarios as their own attribute, not a context variable."""
    from types import SimpleNamespace

    from testbed.cli import runs
    args = SimpleNamespace(set=[], repeat=1, retries=0, names=["hash-polarization"], quick=True,
                           preset=None, servers="hpn-srv1,hpn-srv2")
    monkeypatch.setattr("testbed.cli.up.servers_of", lambda a: ("hpn-srv1", "hpn-srv2"))
    [run] = runs.chosen_runs(args)
    assert run.servers == ("hpn-srv1", "hpn-srv2")
    from testbed.scenario import catalog
    assert catalog.get("hash-polarization").servers == ()          # the class keeps no servers


def test_run_servers_refuses_experiment_files_and_a_count(tmp_path, capsys):
    assert main(["run", "experiments/x.toml", "--servers", "hpn-srv1,hpn-srv2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "experiment files" in err
    assert main(["run", "hash-polarization", "--servers", "2", "--out", str(tmp_path)]) == 2
    assert "name the servers" in capsys.readouterr().err


def test_every_built_in_scenario_passes_its_servers():
    """A scenario that forgot `servers=self.servers` would quietly run on this machine under
    `run --servers`; and no context variable chooses the site behind the scenarios' backs."""
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    missing = []
    for path in sorted((root / "scenarios").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "make_emulation" \
                    and not any(k.arg == "servers" for k in node.keywords):
                missing.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not missing, f"make_emulation without servers=: {missing}"
    assert "ContextVar" not in (root / "testbed/emulation/factory.py").read_text()
