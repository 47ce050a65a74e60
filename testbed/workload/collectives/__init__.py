"""Collectives as traffic: who sends how many bytes to whom, in which phase; and a runner.

    patterns   the traffic of each collective as Transfers, and nccl-tests' metrics (pure)
    runner     runs collectives on an Emulation: Runner, run, Send, CollectiveRun, FlowRecord
    delivery   what the fabric delivered to hosts, from switch port counters

The transfer agent each host runs per phase is testbed/inhost/agent.py, outside this
package: started without site (runner.AGENT), it loads nothing of the model or the runner.
"""
from testbed.workload.collectives.delivery import delivered_payload, host_port_counters
from testbed.workload.collectives.patterns import (
    Collective,
    Transfer,
    algbw,
    all_gather,
    all_to_all,
    busbw_factor,
    moe_all_to_all,
    moe_bytes_per_token,
    moe_targets,
    pipeline,
    reduce_scatter,
    ring_allreduce,
)
from testbed.workload.collectives.runner import CollectiveRun, FlowRecord, Runner, Send, SendResult, run

__all__ = ["Transfer", "Collective", "ring_allreduce", "reduce_scatter", "all_gather", "all_to_all",
           "moe_all_to_all", "moe_bytes_per_token", "moe_targets", "pipeline", "busbw_factor", "algbw",
           "run", "Runner", "Send", "SendResult", "CollectiveRun", "FlowRecord", "host_port_counters",
           "delivered_payload"]
