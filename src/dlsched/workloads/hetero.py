"""Any workload on a heterogeneous cluster: a GPU type per server and a per-type speed per job.

`on_cluster` rebuilds the workload's servers from a cluster spec (``-o cluster=v100:4x8,k80:4x8``,
`dlsched.core.gpu_types`), keeping its cores and memory per GPU; `with_types` names the types of
the servers it has. Either way each job is mapped to one of Gavel's job types: ``job_types`` (job
id -> Gavel job type name) where given, else the job's own model where it is one of Gavel's type
names (a trace's ``model`` column: ``ResNet-50 (batch size 64)``), else one drawn per job from the
26 (seeded). Its speed on a type
is its workload speed times that job type's measured one-GPU throughput on the type relative to
the reference type (the first in the spec): jobs run as the workload says on the reference type,
faster or slower on the others. A job spanning types runs at its slowest type's speed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from dlsched.core import Resources
from dlsched.core.gpu_types import ClusterSpec
from dlsched.models.gavel_table import JOB_TYPES, rates_of
from dlsched.models.typed import TypedSpeed, spread_rates
from dlsched.workloads.base import Workload


def with_types(
    workload: Workload,
    server_types: Sequence[str],
    *,
    servers: tuple[Resources, ...] | None = None,
    seed: int = 0,
    speed_spread: float = 0.0,
    job_types: Mapping[int, str] | None = None,
) -> Workload:
    """``workload`` with GPU types ``server_types`` on its servers (or on ``servers``).

    Raises:
        ValueError: a count of types that is not one per server, a type Gavel did not measure,
            or a ``job_types`` entry that is not one of Gavel's job types.
    """
    servers = workload.servers if servers is None else servers
    if len(server_types) != len(servers):
        raise ValueError(f"{len(server_types)} GPU types for {len(servers)} servers")
    types = tuple(dict.fromkeys(server_types))
    reference = types[0]
    names = [j.name for j in JOB_TYPES]
    known = set(names)
    rng = np.random.default_rng([seed, 2])
    profile: dict[int, dict[str, float]] = {}
    truth: dict[int, dict[str, float]] = {}
    for spec in workload.jobs:
        if job_types is not None and spec.job_id in job_types:
            kind = job_types[spec.job_id]
            if kind not in names:
                raise ValueError(f"job {spec.job_id}: {kind!r} is not one of Gavel's job types")
        elif spec.model in known:
            kind = spec.model
        else:
            kind = names[int(rng.integers(len(names)))]
        rates = rates_of(kind, 1, tuple(dict.fromkeys((*types, reference))))
        profile[spec.job_id] = {t: rates[t] / rates[reference] for t in types}
        truth[spec.job_id] = spread_rates(profile[spec.job_id], speed_spread, rng)
    model = TypedSpeed(workload.model, server_types, truth, estimated=profile)
    params = {**workload.params, "server_types": list(types), "speed_spread": speed_spread}
    return dataclasses.replace(
        workload,
        servers=tuple(servers),
        server_types=tuple(server_types),
        model=model,
        params=params,
    )


def on_cluster(
    workload: Workload, cluster: str, *, seed: int = 0, speed_spread: float = 0.0
) -> Workload:
    """``workload`` on the servers of the spec ``cluster``, with its cores and memory per GPU.

    Raises:
        ValueError: a bad spec, or a workload whose servers have no GPUs.
    """
    spec = ClusterSpec.parse(cluster, f"{workload.name}: cluster")
    first = workload.servers[0]
    if first.gpu <= 0:
        raise ValueError(f"{workload.name}: cluster= needs GPU servers; its servers have none")
    servers = spec.servers(first.cpu / first.gpu, first.mem / first.gpu)
    typed = with_types(
        workload, spec.server_types(), servers=servers, seed=seed, speed_spread=speed_spread
    )
    return dataclasses.replace(typed, params={**typed.params, "cluster": str(spec)})
