"""This machine's kernel plumbing: Open vSwitch bridges and interfaces (netdevs.py), veths
(links.py), the hosts' networking scripts (hostnet.py), shaping, counters, gratuitous ARP, the
RCU and send-buffer settings, and what the machine offers (system.py)."""
