"""`up --cli`: Mininet's CLI on a running fabric, with the testbed's commands beside Mininet's.

    cli       the CLI itself (FabricCLI, run_shell): Mininet's, made to answer every mistake in one line
    fabric    the testbed's commands: trace, fault, rates, queues, routes, check
    mininet   Mininet's pingall, iperf, link and switch redone for NICs with one address each
    capture   capture: tcpdump on a port of the fabric
    routes    `routes SWITCH`'s condensed rules and groups (pure)
    args      the commands' argument parsing, refused in one line (Usage)
"""
