"""Programs that run inside Mininet hosts or on servers, started by path-free `python -m
testbed.inhost.NAME`: the port detector, the frame sender (frames), the transfer agent, the paced
UDP blaster, the path prober (prober) and the port sampler a server streams (portstream,
reading ports.py).

Standard library only (and each other; tests/unit/test_inhost.py holds them to it): they start
in every host, so they load nothing of the model, the emulation or the runner. One exception,
named in that test: pyroute2 in ports.py, the netlink client that reads queue backlog.
"""
