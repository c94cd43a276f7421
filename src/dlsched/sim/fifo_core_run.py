"""The compiled FIFO core (`dlsched.sim.fifo_core`) behind a `Simulator`: which runs it can
replay, and the `Result` it gives (the same per-job records, totals and timeline as
`Simulator.run`), built as the LAS core's (`dlsched.sim.las_core_run`)."""

from __future__ import annotations

import logging
import time
from typing import Any

from dlsched.sim import las_core_run
from dlsched.sim.fifo_core import compiled_replay, replay
from dlsched.sim.result import Result
from dlsched.sim.simulator import Simulator

log = logging.getLogger(__name__)

AUTO_MIN_JOBS = 20_000
"""``core="auto"`` replays FIFO runs of at least this many jobs in the compiled core once it is
compiled (in this process or numba's cache): loading it costs ~0.5 s CPU, which the simulator's
FIFO (~15,000 jobs/s) spends on ~8,000 jobs (benchmarks/RESULTS.md, issue 31)."""
AUTO_MIN_JOBS_COLD = 80_000
"""The same where the next run would compile it (no cache yet, or none writable): compiling
takes ~12 s CPU (~4 s where the LAS core, whose helpers it shares, is cached), so the run that
compiles is slower than the simulator (all of Philly, 82,247 jobs: 14.4 s against 6.7 s CPU on
a loaded 2-core box) and every later one faster (1.7-2.2 s): only runs this large pay it."""


def compiles() -> bool:
    """Whether the next compiled run in this process compiles the FIFO kernel."""
    return las_core_run.compiles(compiled_replay())


def unsupported(sim: Simulator) -> str | None:
    """Why the core cannot replay ``sim`` (None: it can; `dlsched.sim.fifo_core`'s list)."""
    kind = type(sim.scheduler)
    if (kind.__module__, kind.__qualname__) != ("dlsched.schedulers.fifo", "Fifo"):
        return "the scheduler is not fifo"  # (by name: the simulator is below the schedulers)
    return las_core_run.unsupported_setting(sim)


def worth_it(sim: Simulator) -> bool:
    """``simulate(core="auto")``'s choice for a FIFO run: the core replays ``sim``, which is
    large enough (`AUTO_MIN_JOBS`; `AUTO_MIN_JOBS_COLD` where the run would compile it)."""
    n = len(sim.specs)
    if n < AUTO_MIN_JOBS or unsupported(sim) is not None:
        return False
    return n >= AUTO_MIN_JOBS_COLD or not compiles()


def arrays(sim: Simulator) -> tuple[Any, ...]:
    """`fifo_core.replay`'s arguments for ``sim``: `las_core_run.arrays`' without the job ids
    (arrival order is the job index), resume pauses (FIFO never resumes) and shapes."""
    a = las_core_run.arrays(sim)
    submit, _jid, nw, dem, total, _resume, speed, cap, _shape, *rest = a
    return (submit, nw, dem, total, speed, cap, *rest)


def run(sim: Simulator, compiled: bool = True) -> Result | None:
    """``sim.run()``'s result by the core (compiled, or its plain-Python reference), or None
    where the run leaves what the core replays (the stall rule fired: run ``sim`` itself)."""
    wall0 = time.perf_counter()
    if compiled and compiles():
        log.info("compiling the FIFO core with numba (~4-12 s; once where numba can cache it)")
    kernel: Any = compiled_replay() if compiled else replay
    return las_core_run.result_of(sim, kernel(*arrays(sim)), wall0)
