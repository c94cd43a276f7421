"""Starting the processes of live jobs and making sure none outlives its owner.

Processes start with multiprocessing's ``forkserver`` method by default: a server process
imports torch and the runtime once, and every PS/worker/coordinator is forked from it (tens of
milliseconds instead of seconds per process). ``spawn`` (a fresh interpreter per process) is
available too, e.g. to measure a cold restart.

Each child also watches its owner's pid and exits if it disappears; daemon processes are killed
by multiprocessing at interpreter exit; `terminate_all` is registered with `atexit`.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing as mp
import weakref
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from typing import Any

from dlsched.live.workdirs import process_dir

log = logging.getLogger(__name__)

START_METHODS = ("forkserver", "spawn")
_PRELOAD = [
    "dlsched.live.launcher",
    "dlsched.live.ps",
    "dlsched.live.worker",
    "dlsched.live.coordinator",
]
_LAUNCHED: weakref.WeakSet[BaseProcess] = weakref.WeakSet()


def launch(
    target: Callable[[Any], None], args: Any, name: str, method: str = "forkserver"
) -> BaseProcess:
    """Start ``target(args)`` in a new daemon process named ``name``."""
    if method not in START_METHODS:
        raise ValueError(f"start method must be one of {START_METHODS}, got {method!r}")
    process_dir()  # multiprocessing's temporary files go where a killed owner's are swept
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(_PRELOAD)
    proc = ctx.Process(  # type: ignore[attr-defined]
        target=_child, args=(target, args), name=name, daemon=True
    )
    proc.start()
    _LAUNCHED.add(proc)
    return proc


def _child(target: Callable[[Any], None], args: Any) -> None:
    import signal

    from dlsched.live.node import setup_child

    # Ctrl-C reaches the whole process group: the owner stops its jobs' processes in order
    # (SHUTDOWN, then terminate), so a child must not die half-way with a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    level = "WARNING"
    config_json = getattr(args, "config_json", None)
    if isinstance(config_json, str):
        import json

        level = str(json.loads(config_json).get("log_level", "WARNING"))
    setup_child(level)
    target(args)


def _noop(_args: Any) -> None:
    """A child that does nothing (used to start the fork server)."""


def warm_up(method: str = "forkserver", timeout_s: float = 60.0) -> None:
    """Start the fork server now (it imports torch and the runtime once, seconds on a busy
    machine) by running one empty child, so that the first job starts as fast as the next."""
    proc = launch(_noop, None, "warm-up", method)
    stop(proc, timeout_s)


def stop(proc: BaseProcess, timeout_s: float = 5.0) -> None:
    """Wait up to ``timeout_s`` for ``proc`` to exit, then terminate, then kill it."""
    proc.join(timeout_s)
    if proc.is_alive():
        log.warning("process %s did not exit; terminating", proc.name)
        proc.terminate()
        proc.join(2.0)
    if proc.is_alive():
        proc.kill()
        proc.join(2.0)


def alive() -> list[BaseProcess]:
    """Processes launched by this interpreter that are still running."""
    return [p for p in list(_LAUNCHED) if p.is_alive()]


def terminate_all() -> None:
    """Kill every process this interpreter launched that is still running."""
    for proc in alive():
        proc.kill()
        proc.join(2.0)


def stop_forkserver() -> None:
    """Stop multiprocessing's fork server (it is restarted on demand)."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    stopper = getattr(server, "_stop", None)
    if callable(stopper):
        stopper()


atexit.register(terminate_all)
