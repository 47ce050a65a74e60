"""The emulator: a model Fabric made real in Mininet on Open vSwitch, with its processes.

The builder, host configuration, run state, the controller process, faults and path tracing.
Needs root. Imports testbed.core and testbed.model.
"""
