"""`hpn-testbed top`: the view model from two counter samples (pure), what the terminal draws,
the web server's two paths, and the refusals before anything is read."""
import json
import threading
import urllib.request

import pytest

from testbed.cli import main, top, topweb
from testbed.measure import liveview
from testbed.model import make_fabric


def sample(t, counters, **kw):
    return liveview.Sample(t, counters, **kw)


def test_a_switch_cables_load_is_each_ends_sent_bytes_and_a_host_cables_its_switch_end():
    fab = make_fabric("clos3", {})
    sw = next(l for l in fab.links if l.a in fab.switches)
    host = next(l for l in fab.links if l.a not in fab.switches)
    before = sample(0.0, {sw.a_intf: (0, 0, 0), sw.b_intf: (0, 0, 0), host.b_intf: (0, 0, 0)})
    after = sample(2.0, {sw.a_intf: (500_000, 9, 3000), sw.b_intf: (250_000, 9, 0),
                         host.b_intf: (125_000, 1_000_000, 0)})
    v = liveview.view("r1", fab, before, after)
    by = {(c.a, c.b): c for c in v.cables}
    up_sw = by[(sw.a, sw.b)]
    assert up_sw.up_mbps == pytest.approx(2.0) and up_sw.down_mbps == pytest.approx(1.0)
    assert up_sw.queue_bytes == 3000
    assert up_sw.load == pytest.approx(2.0 / fab.link_mbit(sw))
    h = by[(host.a, host.b)]          # up: what the switch port received from the host
    assert h.up_mbps == pytest.approx(4.0) and h.down_mbps == pytest.approx(0.5)
    assert len(v.cables) == len(fab.links) and v.busiest(1)[0].load == max(c.load for c in v.cables)


def test_faults_name_the_downed_cable_and_the_one_direction_drops():
    fab = make_fabric("clos3", {})
    link = fab.links[0]
    s0 = sample(0.0, {})
    s1 = sample(1.0, {}, down=frozenset({link.b_intf}), nft_tables=("hpn_drop_x",),
                flows=("h1: 10.0.0.1:1 -> 10.0.0.2:5201",))
    v = liveview.view("r1", fab, s0, s1)
    assert any(link.a in f and "down" in f for f in v.faults)
    assert any("hpn_drop_x" in f for f in v.faults) and v.flows == ["h1: 10.0.0.1:1 -> 10.0.0.2:5201"]
    d = v.as_dict()
    assert json.loads(json.dumps(d)) == d and {s["name"] for s in d["switches"]} == set(fab.switches)


def test_counters_that_went_back_or_a_missing_port_read_as_zero_not_negative():
    fab = make_fabric("clos3", {})
    link = next(l for l in fab.links if l.a in fab.switches)
    v = liveview.view("r", fab, sample(0.0, {link.a_intf: (900, 0, 0)}),
                      sample(1.0, {link.a_intf: (100, 0, 0)}))
    assert all(c.up_mbps >= 0 and c.down_mbps >= 0 for c in v.cables)


def test_proc_net_tcp_addresses_decode():
    assert liveview.address("0100000A:1451") == "10.0.0.1:5201"


def test_the_terminal_view_shows_the_busiest_cables_with_a_bar_and_says_how_many_it_hides():
    from rich.console import Console
    fab = make_fabric("clos3", {})
    link = next(l for l in fab.links if l.a in fab.switches)
    v = liveview.view("r9", fab, sample(0.0, {link.a_intf: (0, 0, 0)}),
                      sample(1.0, {link.a_intf: (round(fab.link_mbit(link) * 1e6 / 8), 0, 0)}))
    con = Console(width=120, record=True)
    con.print(top.render(v, rows=3))
    text = con.export_text()
    assert f"{link.a}:{link.a_port}-{link.b}:{link.b_port}" in text.splitlines()[2]   # first row
    assert "100%" in text and f"{len(fab.links) - 3} quieter cables not shown" in text
    assert "faults: none" in text and "r9" in text


def test_the_page_and_the_view_are_served_and_nothing_else():
    latest = topweb.Latest()
    latest.set({"run": "r1", "switches": []})
    server = topweb.bind(0, b"<html>page</html>", latest)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert urllib.request.urlopen(base + "/").read() == b"<html>page</html>"
        assert json.loads(urllib.request.urlopen(base + "/view.json").read())["run"] == "r1"
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "/../etc/passwd")
        assert e.value.code == 404
        for host in ("evil.example:%d", "127.0.0.1.evil.example:%d", ""):      # DNS rebinding
            request = urllib.request.Request(base + "/view.json", headers={"Host": host.replace(
                "%d", str(server.server_port))})
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(request)
            assert e.value.code == 421, host
        for host in ("localhost:%d", "localhost:9000"):          # and through a forwarded port
            assert urllib.request.urlopen(urllib.request.Request(base + "/", headers={
                "Host": host.replace("%d", str(server.server_port))})).status == 200
    finally:
        server.shutdown()
        server.server_close()


def test_an_idle_connection_is_dropped(monkeypatch):
    """A connection that sends nothing does not hold one of the server's threads for good."""
    import socket
    monkeypatch.setattr(topweb, "TIMEOUT_S", 0.2)
    server = topweb.bind(0, b"", topweb.Latest())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with socket.create_connection(("127.0.0.1", server.server_port), timeout=30) as idle:
            assert idle.recv(1) == b""       # closed by the server, not by our own timeout
    finally:
        server.shutdown()
        server.server_close()


def test_the_page_loads_nothing_from_elsewhere():
    from importlib import resources
    page = resources.files("testbed.cli").joinpath("top.html").read_text()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    assert "innerHTML" not in page           # names reach the page as text, never as markup


@pytest.mark.parametrize("argv, says", [(["top", "--interval", "0"], "outside"),
                                       (["top", "--interval", "x"], "not a number")])
def test_a_bad_interval_is_one_line_and_exit_2(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1 and says in err


@pytest.mark.parametrize("argv, says", [
    (["top", "--json"], "--json needs --once"),
    (["top", "--web", "--once"], "choose --web or --once"),
    (["top", "--web", "--port", "80"], "1024-65535"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err


def test_a_port_in_use_is_one_line(capsys):
    taken = topweb.bind(0, b"", topweb.Latest())
    try:
        with pytest.raises(Exception) as e:
            topweb.bind(taken.server_port, b"", topweb.Latest())
        assert "cannot listen" in str(e.value)
    finally:
        taken.server_close()


def test_without_root_it_says_root_is_needed(monkeypatch, capsys):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert main(["top"]) == 2
    assert "needs root" in capsys.readouterr().err
