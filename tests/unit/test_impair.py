"""Impairments without a fabric: the words read (`5ms`, `2%`, `100mbit`), the refusals (delay
without netem: one line, exit 2, nothing touched), the nft rule and tc lines, and a table made
from another process found by the teardown."""
from __future__ import annotations

import pytest

from testbed.cli import main
from testbed.emulation.faults import impair as kind
from testbed.emulation.net import impair
from testbed.emulation.net.impair import Impairment, ImpairProblem, parse
from testbed.emulation.run import runstate
from testbed.model import make_fabric

NO_NETEM = {"netem": False, "htb": True, "nft_egress": True}
NETEM = {"netem": True, "htb": True, "nft_egress": False}


@pytest.mark.parametrize("words,want", [
    ({"delay": "5ms", "jitter": "1ms"}, Impairment(delay_ms=5, jitter_ms=1)),
    ({"delay": "250us"}, Impairment(delay_ms=0.25)),
    ({"delay": "0.5s"}, Impairment(delay_ms=500)),
    ({"delay": "7"}, Impairment(delay_ms=7)),                    # bare: ms
    ({"loss": "2%"}, Impairment(loss_pct=2)),
    ({"loss": "0.5"}, Impairment(loss_pct=0.5)),                 # bare: %
    ({"rate": "100mbit"}, Impairment(rate_mbit=100)),
    ({"rate": "1Gbit"}, Impairment(rate_mbit=1000)),
    ({"rate": "500kbit"}, Impairment(rate_mbit=0.5)),
    ({"loss": "20%", "rate": "10"}, Impairment(loss_pct=20, rate_mbit=10)),
])
def test_words_are_read_as_tc_and_mininet_users_write_them(words, want):
    assert parse(**words) == want


@pytest.mark.parametrize("words,key,says", [
    ({"delay": "5 parsecs"}, "delay", "expected a number with one of us, ms, s"),
    ({"delay": "-1ms"}, "delay", "expected a number"),
    ({"loss": "120%"}, "loss", "must be between 0 and 100"),
    ({"loss": "lots"}, "loss", "e.g. 2%"),
    ({"rate": "0mbit"}, "rate", "must be above 0"),
    ({"rate": "100mbps"}, "rate", "kbit, mbit, gbit"),
    ({"jitter": "1ms"}, "jitter", "needs a delay"),
    ({}, None, "nothing to impair"),
    ({"delay": "0ms", "loss": "0%"}, None, "nothing to impair"),
])
def test_bad_words_are_refused_naming_the_key(words, key, says):
    with pytest.raises(ImpairProblem, match=says) as e:
        parse(**words)
    assert e.value.key == key and "\n" not in str(e.value)


def test_without_netem_delay_and_jitter_are_refused_and_loss_and_rate_are_not():
    problem = impair.refusal(parse(delay="5ms", loss="2%"), **NO_NETEM)
    assert problem.key == "delay" and "netem is not available on this kernel" in str(problem)
    assert impair.refusal(parse(loss="2%", rate="100mbit"), **NO_NETEM) is None
    assert impair.refusal(parse(delay="5ms", jitter="1ms", loss="2%"), **NETEM) is None
    assert "no HTB" in str(impair.refusal(parse(rate="1mbit"), netem=True, htb=False, nft_egress=True))
    assert impair.refusal(parse(loss="1%"), netem=False, htb=True, nft_egress=False).key == "loss"


def test_loss_without_netem_is_an_nft_egress_rule_in_hundredths_of_a_percent():
    table = impair.table_name("hpn-20260101-1", "p0s0r0t0-eth3")
    assert table == "hpn_hpn_20260101_1_impair_p0s0r0t0_eth3"
    script = impair.apply_script(parse(loss="2.5%"), "p0s0r0t0-eth3", table, False, 2.5, 48000)
    assert (f"table netdev {table} {{ chain impair {{ type filter hook egress device \"p0s0r0t0-eth3\" "
            "priority 0; numgen random mod 10000 < 250 drop; }; }") in script
    assert "netem" not in script.split("fi\n", 1)[1]          # past the clear: no netem asked for
    assert script.startswith(impair.clear_script("p0s0r0t0-eth3", table, 2.5, 48000))


def test_with_netem_the_bfifo_leaf_becomes_netem_and_the_rate_goes_on_the_htb_class():
    imp = parse(delay="5ms", jitter="1ms", loss="2%", rate="100mbit")
    script = impair.apply_script(imp, "h-n0p0", "t", True, 2.5, 48000)
    assert ("tc qdisc del dev h-n0p0 parent 5:1 handle 10:\n"
            "tc qdisc add dev h-n0p0 parent 5:1 handle 10: netem delay 5ms 1ms loss 2% limit 1000") in script
    assert script.endswith("tc class change dev h-n0p0 parent 5: classid 5:1 htb rate 100.0000mbit burst 15k")
    assert "numgen" not in script and not impair.uses_table(imp, netem=True)
    assert impair.mechanism(imp, netem=True) == "netem, HTB"
    assert impair.mechanism(parse(loss="1%"), netem=False) == "nftables"


def test_clearing_puts_back_the_bfifo_and_the_cables_rate():
    script = impair.clear_script("h-n0p0", "t", 2.5, 48000)
    assert "nft delete table netdev t 2>/dev/null || true" in script
    assert "tc qdisc add dev h-n0p0 parent 5:1 handle 10: bfifo limit 48000" in script
    assert script.endswith("htb rate 2.5000mbit burst 15k")


def test_the_kind_refuses_delay_here_in_the_shells_and_the_files_words(monkeypatch):
    monkeypatch.setattr(kind, "machine", lambda: NO_NETEM)
    monkeypatch.setattr(kind.os, "geteuid", lambda: 0)
    fab = make_fabric("hpn")
    port = fab.host_links()[0].a_intf
    with pytest.raises(kind.ArgProblem, match="^delay: netem is not available on this kernel"):
        kind.Impair().read({"port": port, "delay": "5ms"}, fab)
    assert kind.Impair().read({"port": port, "loss": "20%"}, fab)["loss"] == "20%"


def test_link_impair_refuses_delay_here_in_one_line_before_looking_for_a_fabric(monkeypatch, capsys):
    monkeypatch.setattr(kind, "machine", lambda: NO_NETEM)
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("testbed.emulation.run.runlist.running",
                        lambda run_id=None: pytest.fail("looked for a fabric"))
    assert main(["link", "impair", "p0s0r0t0-eth3", "--delay", "5ms", "--loss", "2%"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("hpn-testbed: delay: netem is not available on this kernel (no sch_netem): here "
                   "only loss (nftables) and rate (HTB) can be set")
    assert main(["link", "impair", "p0s0r0t0-eth3", "--loss", "much"]) == 2
    assert "loss: 'much'" in capsys.readouterr().err


def test_a_table_recorded_from_another_process_is_listed_for_the_teardown(tmp_path, monkeypatch):
    monkeypatch.setattr(runstate, "ROOT", tmp_path)
    owner = runstate.RunState("r-1").create()
    owner.add("nft_tables", "netdev own")
    other = runstate.RunState.load(owner.dir)
    other.add_outside("nft_tables", "netdev from_link_impair")
    other.add_outside("nft_tables", "netdev from_link_impair")      # impaired twice: once listed
    owner.save()                                   # the owner rewrites state.json whole
    assert owner.listed("nft_tables") == ["netdev own", "netdev from_link_impair"]
    assert runstate.RunState.load(owner.dir).listed("nft_tables") == ["netdev own", "netdev from_link_impair"]
