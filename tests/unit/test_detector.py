"""The detector's judgement of ports, on a clock the test drives (no sockets, no root)."""
import io
import socket

from testbed.inhost.detector import Detector

NIC = {"ip": "10.0.0.1", "mac": "02:00:0a:00:00:01", "table": 100, "main": True, "bond": None,
       "ports": ["h-n0p0", "h-n0p1"]}
INTERVAL, DEAD_AFTER = 0.015, 0.06


class FakePort:
    def __init__(self, name, nic):
        self.name, self.nic = name, nic
        self.last_reply, self.live, self.streak = 0.0, True, 0

    def send(self):
        pass


def detector(applied):
    det = Detector([NIC], INTERVAL, DEAD_AFTER, 5, io.StringIO(), make_port=FakePort)
    det.apply = lambda nic, port: applied.append((port.name, port.live))
    return det


def run(det, start, end, answering):
    """Tick every INTERVAL from `start` to `end`; the ports in `answering` answer each probe."""
    t = start
    while t < end:
        det.tick(t)
        for p in det.ports:
            if p.name in answering:
                p.last_reply, p.streak = t, p.streak + 1
        t += INTERVAL
    return t


def test_a_silent_port_goes_out_and_comes_back():
    applied = []
    det = detector(applied)
    t = run(det, 0.0, 0.3, {"h-n0p0", "h-n0p1"})
    assert applied == []
    t = run(det, t, t + 0.3, {"h-n0p1"})            # port 0's answers stop
    assert applied == [("h-n0p0", False)]
    run(det, t, t + 0.3, {"h-n0p0", "h-n0p1"})      # and come back
    assert applied == [("h-n0p0", False), ("h-n0p0", True)]


def test_time_the_detector_was_busy_is_no_ports_silence():
    """A bond change can take longer than dead_after on a slow machine: no probes went out
    meanwhile, so no port may be judged dead for the answers it could not give."""
    applied = []
    det = detector(applied)
    t = run(det, 0.0, 0.3, {"h-n0p0", "h-n0p1"})
    t = run(det, t + 1.0, t + 1.3, {"h-n0p0", "h-n0p1"})   # a second without a tick
    assert applied == []
    run(det, t + 1.0, t + 1.3, {"h-n0p1"})                  # a real silence is still seen
    assert applied == [("h-n0p0", False)]



def test_the_last_live_port_stays_in_and_a_dead_port_stays_out():
    """Port 0 is out for a real fault; port 1 then goes quiet for a moment (a starved CPU delays
    every answer): port 1 is the NIC's last live port and stays in, port 0 stays out."""
    applied = []
    det = detector(applied)
    t = run(det, 0.0, 0.3, {"h-n0p0", "h-n0p1"})
    t = run(det, t, t + 0.3, {"h-n0p1"})              # port 0 dies
    assert applied == [("h-n0p0", False)]
    t = run(det, t, t + 0.2, set())                    # nothing answers for 200 ms
    run(det, t, t + 0.3, {"h-n0p1"})
    assert applied == [("h-n0p0", False)]
    assert [p.live for p in det.ports] == [False, True]


def test_answers_waiting_in_the_socket_count_before_a_port_is_judged():
    """The loop reads every port's queued answers before it judges silence: answers that came
    while the detector itself was not running are no silence of the port."""
    drained = []
    quiet, other = socket.socketpair()    # what select() waits on: nothing ever arrives

    class Queued(FakePort):
        sock = quiet

        def drain(self, now):
            drained.append(now)
            self.last_reply = now

    det = Detector([NIC], INTERVAL, DEAD_AFTER, 5, io.StringIO(), make_port=Queued)
    det.apply = lambda nic, port: None
    ticks = []
    det.tick = lambda now: (ticks.append(now), setattr(det, "running", len(ticks) < 3))
    det.run()
    quiet.close(), other.close()
    assert len(drained) >= 2 * len(ticks) and all(p.live for p in det.ports)
