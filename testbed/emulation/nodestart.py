"""A fabric's Mininet nodes started side by side instead of one after the other.

Each Mininet node starts a shell (`mnexec`; a host's in a new network namespace) and waits for
its prompt, ~10 ms a node when they go one by one: 168 nodes in a segment. Started from a few
threads the waits overlap (each blocks in the kernel, not in Python); the nodes then join the
network in the order asked, as Mininet's addSwitch/addHost would have added them. A node whose
start was under way when an exception or Ctrl-C came still joins, so the teardown ends its
shell and its namespace goes with it.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

WORKERS = 8       # shells starting at once: enough to hide the waits on 2 cores


def add_nodes(net, nodes: list[tuple[str, str, type, dict]], workers: int = WORKERS) -> None:
    """Start each (kind "switch" or "host", name, class, parameters) of `nodes` and add it to
    `net`, with the parameters Mininet's addSwitch/addHost would add (namespace, listen port)."""
    for cls in {cls for _, _, cls, _ in nodes}:
        cls.checkSetup()      # class set-up (OVS's version, ...) once, before the threads
    defaults = {"switch": {"listenPort": net.listenPort, "inNamespace": net.inNamespace},
                "host": {}}
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    futures = [pool.submit(cls, name, **{**defaults[kind], **params})
               for kind, name, cls, params in nodes]
    try:
        for future in futures:
            future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for (kind, name, _, _), future in zip(nodes, futures):
            if future.done() and not future.cancelled() and future.exception() is None:
                node = future.result()
                (net.switches if kind == "switch" else net.hosts).append(node)
                net.nameToNode[name] = node
