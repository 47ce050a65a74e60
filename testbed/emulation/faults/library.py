"""The built-in fault kinds (declared as testbed/emulation/faults/kinds.py says, registered in
testbed/emulation/faults/registry.py): a cable down, a flap train, one direction of a cable
dropped, a whole switch down."""
from __future__ import annotations

from testbed.emulation.faults.inject import Faults, Handle, ended
from testbed.emulation.faults.kinds import PORT, SWITCH, Arg, ArgProblem, FaultKind

CABLE = Arg("port", PORT, "either interface of the cable, e.g. p0s0h0-n0p0 or p0s0r0t0-eth1",
            positional=True)


class LinkDown(FaultKind):
    name, help = "link-down", "a cable down: both ends lose carrier"
    args = (CABLE,)
    repair_word = "link-up"

    def inject(self, faults: Faults, port: str) -> Handle:
        return faults.link_down(faults.link(port))

    def undo(self, faults: Faults, port: str) -> None:
        faults.link_up(faults.link(port))

    def already(self, faults: Faults, port: str) -> str | None:
        link = faults.link(port)
        return f"{link.b_intf} is down already" if faults.holding(("link", link.b_intf)) else None


class Flap(FaultKind):
    name, help = "flap", "a cable flapping: down and up, `count` times, one flap every `period` s"
    args = (CABLE,
            Arg("count", int, "flaps in the train", 3, bounds=(1, 1000)),
            Arg("period", float, "s from one flap to the next", 1.0, bounds=(0.1, 60.0)),
            Arg("down", float, "s down in each flap", 0.5, bounds=(0.01, 60.0)))

    def rules(self, args: dict) -> None:
        if args["down"] >= args["period"]:
            raise ArgProblem("down", f"{args['down']}: must be shorter than period={args['period']}")

    def lasts(self, args: dict) -> float:
        return args["count"] * args["period"]

    def windows(self, args: dict, at: float, end: float) -> list[tuple[float, float]]:
        return [(at + k * args["period"], at + k * args["period"] + args["down"])
                for k in range(args["count"])]

    def inject(self, faults: Faults, port: str, count: int, period: float, down: float) -> Handle:
        """The whole train, then the link is up: the handle has nothing left to repair."""
        link = faults.link(port)
        times = faults.flap_train(link, count, period, down)
        return ended(f"{link.b_intf} flapped at {', '.join(f'{t:.2f}' for t in times)} s; it is up")


class OneWay(FaultKind):
    name, help = "one-way", "one direction of a cable dropped, carrier up"
    args = (CABLE, Arg("direction", str, "up: the lower end -> the upper one (NIC -> ToR); down: back",
                       "up", choices=("up", "down"), positional=True))

    def inject(self, faults: Faults, port: str, direction: str) -> Handle:
        return faults.one_way(faults.link(port), direction)


class SwitchDown(FaultKind):
    name, help = "switch-down", "every port of a switch down"
    args = (Arg("switch", SWITCH, "the switch, e.g. p0s0r0t0", positional=True),)
    repair_word = "switch-up"

    def inject(self, faults: Faults, switch: str) -> Handle:
        return faults.switch_down(switch)

    def undo(self, faults: Faults, switch: str) -> None:
        faults.switch_up(switch)
