"""Every workload by name: generators (``dl2``, ``deeprm``, ``sched2``, ``kubeflow``) and traces
(``philly[:VC]``, ``trace:PATH``).

The names come from the plugins in `dlsched.plugins.PLUGINS`; a generator's module is imported
only when that workload is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from dlsched.plugins import WorkloadEntry, plugins
from dlsched.workloads.base import Workload

__all__ = ["WorkloadEntry", "make_workload", "workloads"]


def workloads() -> dict[str, WorkloadEntry]:
    """Every workload by name, in plugin-table order (`dlsched.plugins.PLUGINS`)."""
    return {entry.name: entry for plugin in plugins() for entry in plugin.workloads}


def __getattr__(name: str) -> Any:
    """``WORKLOADS`` (the dict of `workloads`), kept for one release; built on first access."""
    if name == "WORKLOADS":
        return workloads()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_workload(
    spec: str,
    *,
    seed: int = 0,
    servers: int | None = None,
    load: float | None = None,
    **overrides: Any,
) -> Workload:
    """Build the workload named ``spec`` (``name`` or ``name:ARG``).

    Every workload takes ``cluster="v100:4x8,k80:4x8"`` (and ``speed_spread``, ``job_types``):
    a generator without its own runs on that heterogeneous cluster
    (`dlsched.workloads.hetero.on_cluster`).

    Raises:
        ValueError: unknown name, a missing or unexpected argument, or a bad option value.
    """
    name, sep, arg = spec.partition(":")
    known = workloads()
    entry = known.get(name)
    if entry is None:
        raise ValueError(f"unknown workload {name!r}; choose one of {', '.join(known)}")
    if entry.takes_arg and name == "trace" and not arg:
        raise ValueError("workload 'trace' needs a path: trace:PATH")
    if not entry.takes_arg and sep:
        raise ValueError(f"workload {name!r} takes no ':' argument")
    fn: Callable[..., Workload] = entry.function()
    params = inspect.signature(fn).parameters
    hetero: dict[str, Any] = {}
    if "cluster" in overrides and "cluster" not in params:
        hetero = {"cluster": overrides.pop("cluster")}
        for key in ("speed_spread", "job_types"):
            if key in overrides and key not in params:
                hetero[key] = overrides.pop(key)
    elif "job_types" in overrides and "job_types" not in params:
        raise ValueError("job_types= maps jobs to GPU speeds: it needs cluster=TYPE:SxG,...")
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        accepted = [k for k, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        unknown = sorted(set(overrides) - set(accepted))
        if unknown:
            raise ValueError(
                f"workload {name!r} has no option {', '.join(map(repr, unknown))}; "
                f"its options are {', '.join(accepted)}"
            )
    if entry.takes_arg:
        built = fn(arg or None, seed=seed, servers=servers, load=load, **overrides)
    else:
        built = fn(seed=seed, servers=servers, load=load, **overrides)
    if hetero:
        from dlsched.workloads.hetero import on_cluster

        return on_cluster(built, str(hetero.pop("cluster")), seed=seed, **hetero)
    return built
