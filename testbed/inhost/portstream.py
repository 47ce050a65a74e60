"""Sample this machine's interfaces and stream the samples: what a server runs for a Sampler on
the machine that drives a fabric across servers (testbed/emulation/cluster/meters.py).

    python -m testbed.inhost.portstream --interval 0.1 --counter tx_bytes [--queues]

The interfaces come as a JSON list on the first line of standard input (a list that grows with
the fabric stays off the command line). One JSON line per sample, {"t": monotonic seconds,
"v": {intf: [counter, backlog]}}; it stops when its standard input closes (the ssh session that
started it ended).
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time

from testbed.inhost.ports import Ports


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="portstream")
    ap.add_argument("--interval", type=float, required=True)
    ap.add_argument("--counter", default="tx_bytes")
    ap.add_argument("--queues", action="store_true")
    args = ap.parse_args(argv)
    intfs = json.loads(sys.stdin.readline())
    sampler = Ports(intfs, counter=args.counter, queues=args.queues)
    sampler.open()
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    try:
        while not stop.is_set():
            t = time.monotonic()
            print(json.dumps({"t": t, "v": sampler.read()}), flush=True)
            stop.wait(max(0.0, args.interval - (time.monotonic() - t)))
    except (BrokenPipeError, OSError):   # the reader went away, or an interface did (teardown)
        pass
    finally:
        sampler.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
