"""What a student's runs wrote, indexed by the name a question gives as its `source`.

Under the results directory (by default `out/` next to answers.toml), every JSON file counts:
- a scenario's or experiment's NAME.json (`run ... --out DIR`) is `NAME`, or `SUB/NAME` when it
  lies in the subdirectory SUB (e.g. `--out out/nics3` gives `nics3/dual-tor-link-failure`);
- a saved `run ... --json > FILE.json` (a list of results) gives each of its results the same way;
- any other JSON (a saved `topo budget --json`, `topo show --json`) is its file name without
  .json: `budget-hpn`, `SUB/show-mpft`.
A saved `--json` output counts by its envelope's result (testbed/cli/output.py).
"""
from __future__ import annotations

import os
from pathlib import Path

from testbed.core import files
from testbed.core.errors import ParamError


def index(root: Path) -> dict[str, dict]:
    """source name -> the JSON it names (a result, or a saved output). Each file is read bounded
    (testbed/core/files.py): a FIFO, device, oversized or undecodable one is refused with one
    line that calls it unreadable (ParamError: a corrupt result is not a missing one), as is a
    tree of more than RESULTS_FILES_MAX JSON files or RESULTS_DIRS_MAX directories."""
    found: dict[str, dict] = {}
    for path in json_files(root):
        prefix = "/".join(path.relative_to(root).parent.parts)
        try:
            data = files.load_json(path, "result", files.RESULT_MAX)
        except ParamError as e:     # corrupt, cut off, not UTF-8, a FIFO, too big: not "missing"
            raise ParamError(f"unreadable {e}; run what wrote it again, or remove it") from None
        if isinstance(data, dict) and "hpn_testbed" in data and "result" in data:
            data = data["result"]       # a saved `--json` output: its envelope's result
        for name, result in named(path, data):
            found[f"{prefix}/{name}" if prefix else name] = result
    return found


def json_files(root: Path) -> list[Path]:
    """The *.json files under `root` (symlinked directories not followed, so no loop)."""
    if not root.is_dir():
        return []
    found, looked = [], 0
    for top, dirs, names in os.walk(root, followlinks=False):
        looked += 1
        if looked > files.RESULTS_DIRS_MAX:
            raise ParamError(f"results {files.shown(root)}: more than {files.RESULTS_DIRS_MAX:,} directories "
                             "(name the directory your runs wrote)")
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(top, n) for n in sorted(names) if n.endswith(".json") and not n.startswith(".")]
        if len(found) > files.RESULTS_FILES_MAX:
            raise ParamError(f"results {files.shown(root)}: more than {files.RESULTS_FILES_MAX:,} JSON files")
    return sorted(found)


def named(path: Path, data) -> list[tuple[str, dict]]:
    if isinstance(data, list) and data and all(is_result(r) for r in data):
        return [(r["scenario"], r) for r in data]
    if is_result(data):
        return [(data["scenario"], data), (path.stem, data)] if path.stem != data["scenario"] else \
            [(data["scenario"], data)]
    return [(path.stem, data)] if isinstance(data, dict) else []


def is_result(data) -> bool:
    return isinstance(data, dict) and isinstance(data.get("scenario"), str) and "figures" in data
