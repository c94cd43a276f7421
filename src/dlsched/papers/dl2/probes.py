"""Stall probes: small-cluster traces on which a DL2 policy must finish every job (ours).

A greedy policy trained on 8–20 servers can, on a cluster it never saw (2 servers), leave a
waiting job at zero allocation for good (`dlsched.sim.SimulationStalled`): e.g. it gives the
last job left parameter servers until no worker fits, so nothing ever trains. Training therefore
runs a policy on a few such traces: validation ranks a checkpoint that stalls any probe below
every one that stalls none (`dlsched.papers.dl2.train`), and ES scores a candidate that stalls
one of its iteration's probes ``inf`` (`dlsched.papers.dl2.es`).

Validation probes use fixed seeds from `PROBE_SEED_MIN` (above the invariant tests' 0–10,000,
the held-out 101–110 and validation 201–203; below the training seeds); ES's are drawn from the
training seeds (≥ `dlsched.papers.dl2.env.TRAIN_SEED_MIN`). Each probe is a ``num_jobs``-job
trace on 2 or 3 servers at load 0.5, 1 or 2 (cycled), the invariant test's kind of cluster (the
stalls seen were all on 2 servers).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch import nn

from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.network import Dl2Config, make_scheduler_for
from dlsched.schedulers.base import Scheduler
from dlsched.workloads.base import Workload

log = logging.getLogger(__name__)

PROBE_SEED_MIN = 20_001
"""First trace seed of the validation probes."""
SERVERS = (2, 3)
"""Cluster sizes of the probes (servers), cycled."""
LOADS = (0.5, 1.0, 2.0)
"""Arrival loads of the probes, cycled (after the sizes)."""
NUM_JOBS = 12
"""Jobs per probe trace."""
IDLE_ROUNDS = 72
"""A probe stalls once jobs wait on an idle cluster for this many scheduling rounds in a row
after the last arrival (a day of 20-minute slots). Stricter than the simulator's own limit
(`dlsched.sim.SimConfig.max_idle_retries`, 1,000), so a policy that passes a probe passes it
too; and a stalled probe costs ~0.3 s instead of ~5 s of decisions."""


@dataclass(frozen=True)
class Probe:
    """One small-cluster trace: its seed and generator options."""

    seed: int
    options: dict[str, Any] = field(default_factory=dict)


def _options(i: int) -> dict[str, Any]:
    servers = SERVERS[i % len(SERVERS)]
    load = LOADS[(i // len(SERVERS)) % len(LOADS)]
    return {"servers": servers, "load": load, "num_jobs": NUM_JOBS}


def validation_probes(n: int) -> list[Probe]:
    """The ``n`` fixed validation probes (seeds ``PROBE_SEED_MIN …``, sizes and loads cycled)."""
    return [Probe(PROBE_SEED_MIN + i, _options(i)) for i in range(n)]


def training_probes(n: int, rng: np.random.Generator) -> list[Probe]:
    """``n`` probes on training seeds drawn from ``rng`` (sizes and loads drawn too)."""
    probes = []
    for _ in range(n):
        seed = int(rng.integers(TRAIN_SEED_MIN, 2**31 - 1))
        probes.append(Probe(seed, _options(int(rng.integers(len(SERVERS) * len(LOADS))))))
    return probes


def count_stalls(
    policy: nn.Module,
    cfg: Dl2Config,
    probes: Sequence[Probe],
    workload: str = "dl2",
    *,
    transform: Callable[[Workload], Workload] | None = None,
    first_only: bool = False,
    stop: Callable[[], bool] | None = None,
    **workload_options: Any,
) -> int:
    """How many of ``probes`` the greedy policy stalls (the deployed scheduler, its view only).

    Args:
        transform: applied to each generated trace before simulating it (as `evaluate`'s).
        first_only: stop at the first stall (returns 0 or 1).
        stop: asked before each probe and after each of its jobs finishes; True ends the
            count there (a probe cut part way is not counted).
        workload_options: generator options of every probe; its own size, load and job count
            replace these.
    """
    from dlsched.workloads.registry import make_workload

    stalls = 0
    for done, probe in enumerate(probes):
        if stop is not None and stop():
            log.warning("stall probes: stopped after %d (wall-time budget spent)", done)
            break
        trace = make_workload(workload, seed=probe.seed, **{**workload_options, **probe.options})
        if transform is not None:
            trace = transform(trace)
        if _stalls(trace, make_scheduler_for(policy, cfg), probe.seed, stop):
            log.debug("probe seed %d %s: stalled", probe.seed, probe.options)
            stalls += 1
            if first_only:
                break
    return stalls


class _Stopped(Exception):
    """Raised from a probe's job-finished callback to cut it (`count_stalls`' ``stop``)."""


def _stalls(
    trace: Workload, scheduler: Scheduler, seed: int, stop: Callable[[], bool] | None = None
) -> bool:
    """Whether ``scheduler`` stalls ``trace`` (`dlsched.simulate` with `IDLE_ROUNDS`); False
    for a run ``stop`` cut."""
    from dlsched.runner import simulate
    from dlsched.sim import SimulationStalled

    def check(finished: int, total: int) -> None:
        if stop is not None and stop():
            raise _Stopped

    try:
        simulate(
            trace,
            scheduler,
            seed,
            max_idle_retries=IDLE_ROUNDS,
            on_job_finished=None if stop is None else check,
        )
    except SimulationStalled:
        return True
    except _Stopped:
        return False
    return False
