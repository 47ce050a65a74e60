"""A routing policy of your own, as a plug-in: `sudo hpn-testbed up clos3 --custom
examples/custom_policy.py --policy first-port --check` (or `policy = "first-port"` in an
experiment file's [routing], with `custom = "custom_policy.py"`; its option from Python:
`Options(routing={"policy": "first-port", "skip": 1})`).

"first-port": every switch sends each destination out of the lowest-numbered of its next hops,
so each destination has one path and no switch hashes: predictable, at the price of ECMP's
spread. A policy only chooses among the next hops the model computed (it never invents a port);
`register` checks its name, summary and options before it joins, and the controller, a process
of its own, loads this same file (the run's spec names it) before it routes.
"""
from __future__ import annotations

from testbed.model.policies import Number, RoutingPolicy, register
from testbed.model.routing import Route


class FirstPort(RoutingPolicy):
    name = "first-port"
    summary = "one path per destination: each switch's lowest-numbered next hop, no hashing"
    options = (Number("skip", 0, 0, 7, "use the next hop this many places after the lowest "
                                        "(modulo how many there are)"),)

    def routes(self, fabric, routes, core, opts):
        """Each route keeps one of its next hops: the lowest-numbered, or `skip` places on."""
        skip = int(opts.get("skip", 0))
        out = []
        for r in routes:
            ports = sorted(r.ports)
            out.append(Route(r.switch, r.ip, (ports[skip % len(ports)],), r.deliver_mac))
        return out


register(FirstPort())
