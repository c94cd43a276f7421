"""Independent runs of a sweep on a Dask distributed cluster (the optional ``dask`` extra).

The runs are sent as `RunTask`s (names, a seed, options) in chunks (`parallel.Dispatch`: sized
by the cluster's worker threads, the costliest first once known) to `run_chunk` on the Dask
workers, which build the workloads and the schedulers from their names there and send the
results back packed (`dlsched.experiments.packing`): the workers need dlsched (the same
version) installed, nothing else is shipped. ``"local"`` starts a `LocalCluster` on this
machine for the sweep (one single-threaded worker process per core, listening on 127.0.0.1
only) and stops it after.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from dlsched.experiments.parallel import RunTask, run_chunk, run_dispatched
from dlsched.sim import Result

log = logging.getLogger(__name__)

LOCAL = "local"
"""The address that starts a cluster on this machine for the sweep."""


CONNECT_S = 5.0
"""Seconds to open a TCP connection to the scheduler: an address nobody listens on fails
within this time (Dask's client retries a refused connection for its whole timeout)."""

HANDSHAKE_S = 30.0
"""Seconds for the Dask client's handshake once the scheduler's port answers."""


def _probe(distributed: Any, address: str) -> None:
    """Open and close one TCP connection to a ``tcp://`` or ``tls://`` scheduler address
    (other protocols are left to Dask).

    Raises:
        OSError: refused, unreachable or unknown host, or no answer within `CONNECT_S`.
    """
    scheme, location = distributed.comm.parse_address(address)
    if scheme not in ("tcp", "tls"):
        return
    host, port = distributed.comm.parse_host_port(location)
    with socket.create_connection((host, port), timeout=CONNECT_S):
        pass


def _distributed(option: str) -> Any:
    """The ``distributed`` module, or a one-line error saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ValueError(f"{option} needs Dask distributed: pip install 'dlsched[dask]'") from None
    return distributed


def run_on_dask(
    tasks: Sequence[RunTask],
    address: str,
    *,
    on_run: Callable[[Result], None] | None = None,
    option: str = "--dask",
) -> list[Result]:
    """Run ``tasks`` on the Dask cluster at ``address``; the results in the order of ``tasks``.

    Args:
        tasks: the runs.
        address: a Dask scheduler's address (``tcp://host:8786``) or ``"local"``.
        on_run: called in this process with each result as it arrives (completion order).
        option: the option's name in error messages.

    Raises:
        ValueError: naming ``option`` when Dask distributed is not installed or the cluster
            cannot be reached; the first failed run's exception (the others are cancelled).
    """
    distributed = _distributed(option)
    with ExitStack() as stack:
        if address == LOCAL:
            cluster = stack.enter_context(
                distributed.LocalCluster(
                    n_workers=min(os.cpu_count() or 1, len(tasks)),
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    silence_logs=logging.WARNING,  # its INFO lines are not dlsched's to print
                )
            )
            address = cluster.scheduler_address
        try:
            _probe(distributed, address)
            client = stack.enter_context(distributed.Client(address, timeout=HANDSHAKE_S))
        except Exception as exc:  # refused, timed out, or something else answers there
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            reason = (reason.strip().splitlines() or [""])[0][:200]
            if not isinstance(exc, (OSError, TimeoutError)):
                reason = f"not a Dask scheduler? {type(exc).__name__} {reason}".rstrip()
            raise ValueError(
                f"{option}: cannot reach a Dask scheduler at {address}: {reason}"
            ) from None
        threads = max(1, sum(client.nthreads().values()))  # none yet: one chunk at a time
        log.info("%d runs on the Dask cluster at %s (%d threads)", len(tasks), address, threads)
        return run_dispatched(
            tasks,
            threads,
            lambda chunk: client.submit(run_chunk, chunk, pure=False),
            lambda futures: distributed.wait(futures, return_when="FIRST_COMPLETED").done,
            on_run,
        )
