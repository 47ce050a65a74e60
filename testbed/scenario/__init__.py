"""The framework the claims are written with: the Scenario base class and its verdicts (base),
parameters (knobs), the harness of the fault scenarios (fault_harness: a busy host, a fault on a
timeline, the streams it hit), the helpers of the traffic scenarios (traffic_helpers: setups,
pinned ports, validity), plots, `run --repeat` (repeat) and the reasons for an invalid verdict."""
