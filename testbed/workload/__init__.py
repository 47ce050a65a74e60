"""Traffic on a running emulation: iperf3 flows, collectives and host-side path selection.

Imports testbed.core, testbed.model and testbed.emulation.
"""
