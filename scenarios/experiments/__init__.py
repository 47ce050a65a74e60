"""Experiment files: a user's own experiment in TOML, no Python (see experiments/ for examples).

    name = "nic0-link-down"
    [fabric]     family and any `topo show` parameter (nics = 3, ...), or preset
    [routing]    the options of `up`: ecmp, policy, core, matrix, detector
    [[traffic]]  kind = "iperf3" (from, to: a host, all its NICs NIC i to NIC i, or a NIC; streams
                 per NIC, seconds, rate_mbit) or a collective (allreduce, reduce-scatter,
                 all-gather, all-to-all, moe, pipeline: hosts, size, pace, tokens, m, stages)
    [[fault]]    at (s after the traffic starts), kind (link-down, flap, one-way, switch-down),
                 port (a host port or SWITCH-ethN) or switch, for (s); flap: count, period, down;
                 one-way: direction (up: toward the switch, or down)
    [measure]    throughput (hosts, NICs or links), queues (switch ports), warm, settle, interval

    spec      the file's tables and how a problem is reported (FILE:LINE: table: key: problem)
    check     every table checked against the fabric model: load(path) -> Spec (pure)
    phases    phases and their means, losses (pure)
    runner    the run: Experiment, a Scenario without a claim

`hpn-testbed run FILE.toml` runs one; its JSON gives, for each watched host, NIC or link, its mean
rate in each phase (before, each fault, after) and `loss`, the relative loss during the first fault.
"""
from scenarios.experiments.runner import Experiment, load

__all__ = ["Experiment", "load"]
