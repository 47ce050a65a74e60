"""Helpers the unit tests share (test modules cannot import each other: pytest.ini)."""


def put(path: str, value):
    """A change to recorded figures: the value at a dotted path ("dual_tor.loss", "rows.1.error")."""
    def change(figures):
        *parents, last = path.split(".")
        node = figures
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value
    return change
