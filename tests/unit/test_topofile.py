"""The file family: a fabric from a topology file (examples/three-tier.toml) is built the way
every family is (names, IPs, MACs, DPIDs derived; routed by shortest paths), and a malformed file
gives one line per problem, exit status 2, nothing created (the CLI fails before any Emulation)."""
from pathlib import Path

import pytest

from testbed.cli import main
from testbed.core.errors import ParamError
from testbed.model import make_fabric

from .conftest import trip_past_checks

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "three-tier.toml"
TEXT = EXAMPLE.read_text()
CABLE_A0 = '[[cable]]\na = "a0"\nb = "z0t0"\n'
A3 = '[[host]]\nname = "a3"\n[[cable]]\na = "a3"\nb = "z0t0"\n'
LONELY = ('[[switch]]\nname = "lt"\nrole = "tor"\n'
          '[[host]]\nname = "lonely"\n[[cable]]\na = "lonely"\nb = "lt"\n')


def test_the_example_is_three_tiers_no_family_makes():
    fab = make_fabric("file", {"topology": str(EXAMPLE)})
    assert {s.tier for s in fab.switches.values()} == {1, 2, 3}
    assert fab.params.radix == 8, "the file's radix"
    assert fab.hosts["a2"].nics[0].ports == ("a2-n0p0", "a2-n0p1"), "a dual-ToR NIC"
    assert [n.ip for n in fab.nics()] == [f"10.0.0.{i}" for i in range(1, 6)]
    assert len({s.dpid for s in fab.switches.values()}) == len(fab.switches)
    a0, b0 = fab.nic("a0"), fab.nic("b0")
    assert fab.equal_cost_paths(a0, b0) == 4, "2 aggs in each zone, one trunk"
    assert len(fab.routed_pairs()) == 5 * 4


BAD = [   # (what, the file's text, what its one line says after "FILE: ")
    ("not TOML", TEXT + "[[switch]\n", "not valid TOML"),
    ("unknown role", TEXT.replace('name = "z1c"\nrole = "core"', 'name = "z1c"\nrole = "router"'),
     "[[switch]] 10: role: 'router': choose from tor, leaf, edge, agg, spine, core"),
    ("tier not its role's", TEXT.replace("tier = 3", "tier = 2"), "[[switch]] 5: tier: 2: a core is tier 3"),
    ("duplicate name", TEXT + '[[switch]]\nname = "a0"\nrole = "leaf"\n',
     "[[host]] a0: name: used twice (switch and host names are one namespace)"),
    ("dangling cable", TEXT.replace('b = "z1c"\ngbps = 25', 'b = "z9c"\ngbps = 25'),
     "[[cable]] 19: b: 'z9c': no switch or host of that name (a dangling cable)"),
    ("ports over radix", TEXT.replace("radix = 8 ", "radix = 4 ") + A3,
     "[[switch]] z0t0: 5 cables: over the radix (4; set radix = N at the top of the file)"),
    ("unreachable host", TEXT + LONELY,
     "[[host]] lonely: unreachable: no cable path to the rest of the fabric's hosts"),
    ("host port not cabled", TEXT.replace(CABLE_A0, ""), "[[host]] a0: port a0-n0p0 is cabled nowhere"),
    ("host port cabled twice", TEXT + CABLE_A0.replace("z0t0", "z0t1"),
     "[[host]] a0: port a0-n0p0 is cabled twice or more"),
    ("unknown key", TEXT.replace('role = "tor"\npod = 1', 'role = "tor"\ncolour = "red"', 1),
     "[[switch]] 6: colour: unknown key; known: name, role, tier, plane, rail, pod"),
    ("two hosts cabled", TEXT + '[[cable]]\na = "a0"\nb = "b0"\n',
     "[[cable]] 20: a cable joins a host port to a switch, or two switches; not two hosts"),
    ("no such port", TEXT.replace('a = "a2-n0p1"', 'a = "a2-n1p1"'),
     "[[cable]] 4: a: 'a2-n1p1': a2 has no such port (1 NICs of 2 ports)"),
    ("bad name", TEXT.replace('name = "b1"\n', 'name = "B-1"\n').replace('"b1"', '"B-1"'),
     "[[host]] 5: name: 'B-1': a lower-case letter, then letters and digits (it names interfaces)"),
]


@pytest.mark.parametrize("what, text, line", BAD, ids=[b[0] for b in BAD])
def test_a_malformed_topology_is_one_line_exit_2_nothing_created(what, text, line, tmp_path,
                                                                 monkeypatch, capsys):
    path = tmp_path / "fab.toml"
    path.write_text(text)
    trip_past_checks(monkeypatch)       # an Emulation, a run or a process fails the test
    assert main(["up", "file", "--set", f"topology={path}", "--check"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    [only] = err.splitlines()
    assert only.startswith(f"hpn-testbed: {path}: ")
    assert line in only, only


def test_every_problem_is_a_line(tmp_path):
    path = tmp_path / "fab.toml"
    path.write_text(TEXT.replace("tier = 3", "tier = 1").replace('role = "router"', "")
                    .replace('b = "z1c"\ngbps = 25', 'b = "z9c"\ngbps = 25') + '[[host]]\nname = "h9"\n')
    with pytest.raises(ParamError) as refused:
        make_fabric("file", {"topology": str(path)})
    assert len(str(refused.value).splitlines()) == 2, "the tier; the dangling cable"


def test_a_missing_topology_file_is_one_line(capsys, tmp_path):
    assert main(["topo", "show", "file", "--set", f"topology={tmp_path}/nosuch.toml"]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_the_file_radix_is_the_one_the_fabric_is_held_to(tmp_path, capsys):
    """`radix = 256` in the file, 70 cables on one switch: the file's radix, not the default 64
    (the message for a switch over the radix says to set it there)."""
    hosts = "".join(f'[[host]]\nname = "h{i}"\n' for i in range(70))
    cables = "".join(f'[[cable]]\na = "h{i}"\nb = "s"\n' for i in range(70))
    path = tmp_path / "star.toml"
    path.write_text(f'radix = 256\n[[switch]]\nname = "s"\nrole = "leaf"\n{hosts}{cables}')
    assert make_fabric("file", {"topology": str(path)}).params.radix == 256
    assert main(["topo", "show", "file", "--set", f"topology={path}", "--json"]) == 0
    assert '"radix": 256' in capsys.readouterr().out
    path.write_text(path.read_text().replace("radix = 256", "radix = 32"))
    assert main(["topo", "show", "file", "--set", f"topology={path}"]) == 2
    assert "70 cables: over the radix (32" in capsys.readouterr().err


def test_a_cable_between_two_spines_is_neither_up_nor_down(tmp_path):
    """Issue 40 item 12: a spine-to-spine cable was counted as a spine uplink ("oversub. 7:1")."""
    text = (EXAMPLE.parent / "tree.toml").read_text().replace(
        '[[switch]]\nname = "root"\nrole = "spine"',
        '[[switch]]\nname = "root"\nrole = "spine"\n[[switch]]\nname = "root2"\nrole = "spine"')
    text += ('\n[[cable]]\na = "leaf0"\nb = "root2"\n[[cable]]\na = "leaf1"\nb = "root2"\n'
             '[[cable]]\na = "root"\nb = "root2"\n')
    path = tmp_path / "t.toml"
    path.write_text(text)
    spine = make_fabric("file", {"topology": str(path)}).summary()["tiers"]["spine"]
    assert spine["up_gbps"] == 0 and spine["oversubscription"] is None
    assert spine["peer_gbps"] == 2 * spine["down_gbps"] / 4
