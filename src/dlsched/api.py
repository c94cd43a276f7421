"""The public API: run a workload under a scheduler, by name or by object, in one call.

`simulate` runs one workload under one scheduler (`dlsched.runner`); `compare` runs several
schedulers over several seeds and summarises them (`dlsched.experiments.compare`);
`make_scheduler` and `make_workload` build one by name. This module is the front door: only the
CLI and ``dlsched/__init__`` import it, and modules inside the package import the layer they need
(`dlsched.runner`, the registries) instead, so that the layers below never reach back up here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from dlsched.runner import simulate
from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload

if TYPE_CHECKING:
    from dlsched.experiments.compare import Summary


def compare(
    workload: str,
    schedulers: Sequence[str | Scheduler],
    seeds: Iterable[int],
    **options: Any,
) -> list[Summary]:
    """Run every scheduler on every seed of one workload; one `Summary` per scheduler.

    Every scheduler gets the same jobs for a given seed. Each `Summary` holds, per metric
    (``avg_jct_s`` in s, ``avg_slowdown``, ``makespan_s`` in s, ``gpu_util`` in 0–1, …, see
    `dlsched.experiments.compare.METRICS`), the mean over seeds and the half-width of its
    Student-t 95 % confidence interval.

    Args:
        workload: a registered workload name (``"dl2"``).
        schedulers: names (``"drf"``) or `Scheduler` objects (a `dlsched.rl.adapter.PolicyAdapter`).
        seeds: workload and simulator seeds.
        **options: `simulate`'s keyword arguments (``servers=20``, ``load=1.3``,
            ``interval_s=1.0``, generator options).
    """
    # imported here: SciPy (the confidence intervals) is not needed by `import dlsched`
    from dlsched.experiments.compare import run_grid, summarise

    return summarise(run_grid(workload, schedulers, seeds, **options))


__all__ = ["compare", "make_scheduler", "make_workload", "simulate"]
