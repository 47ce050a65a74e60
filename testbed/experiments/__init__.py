"""Experiment files: a user's own experiment in TOML, no Python (see experiments/ for examples).

    name = "nic0-link-down"
    [fabric]     family and any `topo show` parameter (nics = 3, ...), or preset
    [routing]    the options of `up`: ecmp, policy, core, matrix, detector
    [[traffic]]  kind (a registered traffic kind: iperf3, or a collective; testbed/experiments/
                 traffic/), start, and the kind's own keys (iperf3: from, to, streams, seconds or
                 stop, protocol, rate_mbit; docs/experiments.md lists every kind's)
    [[fault]]    at (s after the traffic starts), kind (a registered fault kind;
                 testbed/emulation/faults/registry.py), for (s, unless the kind times itself) and
                 the kind's own arguments (docs/faults.md)
    [measure]    throughput (hosts, NICs or links), queues (switch ports), rtt and failover_gap
                 (NIC pairs), warm, settle, interval
    [[expect]]   measure (loss, throughput, rtt, failover_gap, busbw) and a bound (min, max):
                 the verdict, reproduced or not (expect.py; docs/experiments.md)

    spec      the file's tables and how a problem is reported (FILE:LINE: table: key: problem)
    check     every table checked against the fabric model: load(path) -> Spec (pure)
    expect    the expect clauses read, and judged against a run's figures (pure)
    phases    phases and their means, losses (pure)
    probes    RTT and failover-gap probes between NIC pairs
    traffic/  the traffic kinds: each one declaration (keys, checks, schema, runner), one registry
    runner    the run: Experiment, a Scenario whose claim is its expect clauses

`hpn-testbed run FILE.toml --check` validates one without root; `run FILE.toml` runs it; its JSON
gives, for each watched host, NIC or link, its mean rate in each phase (before, each fault, after)
and `loss`, the relative loss during the first fault.
"""
from testbed.experiments.runner import Experiment, load

__all__ = ["Experiment", "load"]
