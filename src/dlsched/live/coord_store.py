"""The coordinator's state file and its snapshot directories.

``<workdir>/coordinator.json`` is rewritten (atomically) after every change of the roster, the
members or the last complete snapshot, so that a restarted coordinator carries on
(`CoordinatorCore.restore`). Snapshots live in ``<workdir>/snapshots/v<version>/ps<id>.blk``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

STATE_FILE = "coordinator.json"
ENDPOINT_FILE = "coordinator.endpoint"


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` in one step (write a temporary file, then rename)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def save_state(workdir: Path, state: dict[str, Any]) -> None:
    write_atomic(workdir / STATE_FILE, json.dumps(state, indent=1))


def load_state(workdir: Path) -> dict[str, Any]:
    """The saved state.

    Raises:
        OSError, ValueError: if the file is missing or not a JSON object.
    """
    state = json.loads((workdir / STATE_FILE).read_text())
    if not isinstance(state, dict):
        raise ValueError(f"{workdir / STATE_FILE} is not a JSON object")
    return state


def delete_snapshots(workdir: Path, which: Callable[[int], bool], keep: Iterable[str]) -> None:
    """Remove the snapshot directories whose version satisfies ``which``, except those holding
    a file of ``keep``."""
    root = workdir / "snapshots"
    if not root.is_dir():
        return
    kept = {Path(f).parent for f in keep}
    for d in root.iterdir():
        numbered = d.name.startswith("v") and d.name[1:].isdigit()
        if numbered and which(int(d.name[1:])) and d not in kept:
            shutil.rmtree(d, ignore_errors=True)
