"""Every workload by name: generators (``dl2``, ``deeprm``, ``sched2``, ``kubeflow``) and traces
(``philly[:VC]``, ``trace:PATH``)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dlsched.workloads.base import Workload


@dataclass(frozen=True)
class WorkloadEntry:
    """A registered workload.

    Attributes:
        name: registry name (the part before ``:``).
        target: ``module:function`` building it; called as ``fn(arg, seed=…, servers=…, load=…)``
            for traces and ``fn(seed=…, servers=…, load=…)`` for generators.
        takes_arg: whether the name carries an argument after ``:``.
        description: one line for ``dlsched list``.
    """

    name: str
    target: str
    takes_arg: bool
    description: str

    def function(self) -> Callable[..., Workload]:
        module, _, attr = self.target.partition(":")
        fn: Callable[..., Workload] = getattr(importlib.import_module(module), attr)
        return fn


WORKLOADS: dict[str, WorkloadEntry] = {
    entry.name: entry
    for entry in (
        WorkloadEntry(
            "dl2",
            "dlsched.workloads.dl2:make_dl2",
            False,
            "DL2 §6: 8 PS job types with measured speeds, 1,200 s slots, 13-server testbed",
        ),
        WorkloadEntry(
            "deeprm",
            "dlsched.workloads.deeprm:make_deeprm",
            False,
            "DeepRM §4.1: 2-resource packing, Bernoulli arrivals, load 10-190 %",
        ),
        WorkloadEntry(
            "sched2",
            "dlsched.workloads.sched2:make_sched2",
            False,
            "SCED² §IV: 15×8-GPU servers, 68 % one-GPU jobs, locality-sensitive models",
        ),
        WorkloadEntry(
            "kubeflow",
            "dlsched.workloads.kubeflow:make_kubeflow",
            False,
            "Kubeflow dynamic scheduler: prioritised jobs with min/max replicas on CPU nodes",
        ),
        WorkloadEntry(
            "pollux",
            "dlsched.workloads.pollux:make_pollux",
            False,
            "Pollux §5.3: 160 goodput jobs, 16×4 GPUs (workload=1..8, jobs=adaptive|tuned)",
        ),
        WorkloadEntry(
            "philly",
            "dlsched.workloads.traces:load_philly",
            True,
            "Microsoft Philly trace (82,247 jobs, 2017); philly:VC for one virtual cluster",
        ),
        WorkloadEntry(
            "trace",
            "dlsched.workloads.traces:load_trace",
            True,
            "your CSV/Parquet trace: trace:PATH (submit_time, duration, num_gpus, …)",
        ),
    )
}


def make_workload(
    spec: str,
    *,
    seed: int = 0,
    servers: int | None = None,
    load: float | None = None,
    **overrides: Any,
) -> Workload:
    """Build the workload named ``spec`` (``name`` or ``name:ARG``).

    Raises:
        ValueError: unknown name, a missing or unexpected argument, or a bad option value.
    """
    name, sep, arg = spec.partition(":")
    entry = WORKLOADS.get(name)
    if entry is None:
        raise ValueError(f"unknown workload {name!r}; choose one of {', '.join(WORKLOADS)}")
    if entry.takes_arg and name == "trace" and not arg:
        raise ValueError("workload 'trace' needs a path: trace:PATH")
    if not entry.takes_arg and sep:
        raise ValueError(f"workload {name!r} takes no ':' argument")
    fn = entry.function()
    params = inspect.signature(fn).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        accepted = [k for k, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        unknown = sorted(set(overrides) - set(accepted))
        if unknown:
            raise ValueError(
                f"workload {name!r} has no option {', '.join(map(repr, unknown))}; "
                f"its options are {', '.join(accepted)}"
            )
    if entry.takes_arg:
        return fn(arg or None, seed=seed, servers=servers, load=load, **overrides)
    return fn(seed=seed, servers=servers, load=load, **overrides)
