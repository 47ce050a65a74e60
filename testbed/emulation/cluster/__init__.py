"""One fabric across several servers: Mininet Cluster Edition's nodes (nodes.py), the servers
(servers.py, server_files.py, parts.py), the site that places a fabric on them (site.py) and their
meters (meters.py)."""
