"""Measurement: meters (port rates, queues, gaps, CPU) and the bring-up checks.

Imports every layer below it (the checks drive traffic from testbed.workload).
"""
