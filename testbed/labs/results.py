"""What a student's runs wrote, indexed by the name a question gives as its `source`.

Under the results directory (by default `out/` next to answers.toml), every JSON file counts:
- a scenario's or experiment's NAME.json (`run ... --out DIR`) is `NAME`, or `SUB/NAME` when it
  lies in the subdirectory SUB (e.g. `--out out/nics3` gives `nics3/dual-tor-link-failure`);
- a saved `run ... --json > FILE.json` (a list of results) gives each of its results the same way;
- any other JSON (a saved `topo budget --json`, `topo show --json`) is its file name without
  .json: `budget-hpn`, `SUB/show-mpft`.
"""
from __future__ import annotations

import json
from pathlib import Path


def index(root: Path) -> dict[str, dict]:
    """source name -> the JSON it names (a result, or a saved output)."""
    found: dict[str, dict] = {}
    for path in sorted(root.rglob("*.json")) if root.is_dir() else []:
        prefix = "/".join(path.relative_to(root).parent.parts)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue          # a half-written or foreign file is not a result
        for name, result in named(path, data):
            found[f"{prefix}/{name}" if prefix else name] = result
    return found


def named(path: Path, data) -> list[tuple[str, dict]]:
    if isinstance(data, list) and data and all(is_result(r) for r in data):
        return [(r["scenario"], r) for r in data]
    if is_result(data):
        return [(data["scenario"], data), (path.stem, data)] if path.stem != data["scenario"] else \
            [(data["scenario"], data)]
    return [(path.stem, data)] if isinstance(data, dict) else []


def is_result(data) -> bool:
    return isinstance(data, dict) and isinstance(data.get("scenario"), str) and "figures" in data
