"""Temporary folders of live runs, removed on every way out.

Everything temporary a process running live jobs creates goes under one folder of its own,
``<tmp>/dlsched-live-<pid>-*`` (`process_dir`): the jobs' work folders of runs without ``--out``
and multiprocessing's ``pymp-*`` folder (the fork server's socket). It is removed at exit; if
the process is killed (SIGKILL leaves no way out), the next process that runs live jobs removes
it (`sweep_stale`): the folder names its owner's pid.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing.process
import os
import shutil
import tempfile
from pathlib import Path

from dlsched.live.node import pid_alive

log = logging.getLogger(__name__)

PREFIX = "dlsched-live-"
OWNER_FILE = "owner.pid"
MAX_BASE_CHARS = 50
"""A temporary folder with a longer path is not used: multiprocessing's socket inside it
(``<tmp>/dlsched-live-<pid>-xxxxxxxx/listener-xxxxxxxx``) must fit ``AF_UNIX``'s 107 bytes."""
_DIR: Path | None = None


def process_dir() -> Path:
    """This process's folder for temporary files of live jobs (created, and made
    multiprocessing's temporary folder, on the first call; stale ones are swept then)."""
    global _DIR
    if _DIR is None or not _DIR.is_dir():
        base = Path(tempfile.gettempdir())
        if len(str(base)) > MAX_BASE_CHARS and Path("/tmp").is_dir():
            base = Path("/tmp")  # the fork server's socket path would be too long
        sweep_stale(base)
        _DIR = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base))
        (_DIR / OWNER_FILE).write_text(str(os.getpid()))
        config = multiprocessing.process.current_process()._config  # type: ignore[attr-defined]
        if "tempdir" not in config:  # multiprocessing has not made its pymp-* folder yet
            config["tempdir"] = str(_DIR)
        atexit.register(_remove, _DIR)
    return _DIR


def make_run_dir() -> Path:
    """A new work folder for one live run without ``--out``, inside `process_dir`."""
    return Path(tempfile.mkdtemp(prefix="run-", dir=process_dir()))


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def sweep_stale(root: Path | None = None) -> list[Path]:
    """Remove the folders of processes that are gone (killed before they could); returns them."""
    removed = []
    for d in (root or Path(tempfile.gettempdir())).glob(f"{PREFIX}*"):
        try:
            pid = int((d / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue  # not ours, or being created
        if pid != os.getpid() and not pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
            log.info("removed %s, left by process %d", d, pid)
    return removed
