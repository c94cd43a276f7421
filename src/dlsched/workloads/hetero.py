"""Any workload on a heterogeneous cluster: a GPU type per server and a per-type speed per job.

`on_cluster` rebuilds the workload's servers from a cluster spec (``-o cluster=v100:4x8,k80:4x8``,
`dlsched.core.gpu_types`), keeping its cores and memory per GPU; `with_types` names the types of
the servers it has. Either way each job is mapped to one of Gavel's job types, as ``job_types``
(the ``-o job_types=...`` option) says:

* ``drawn`` (the default): the job's own model where it is one of Gavel's type names, else one
  drawn per job from the 26 (seeded); relative speeds of one GPU;
* ``model``: a fixed mapping of the job's model (`MODEL_TO_GAVEL`: dlsched's trace models to the
  nearest Gavel job type; Gavel's own names kept; any other name by a stable hash of it, CRC-32
  modulo 26), with the relative speeds measured at the job's size (`gavel_scale`);
* a path to a CSV file with columns ``job_id`` and ``job_type`` (a Gavel type name): those jobs
  get that type, the others are mapped as ``model`` does; relative speeds at the job's size.

A job's speed on a type is its workload speed times its Gavel type's measured throughput on the
type relative to the reference type (the first in the spec): jobs run as the workload says on the
reference type, faster or slower on the others. A job spanning types runs at its slowest type's
speed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence

import numpy as np

from dlsched.core import Resources
from dlsched.core.gpu_types import ClusterSpec
from dlsched.models.gavel_table import JOB_TYPES, rates_of
from dlsched.models.typed import TypedSpeed, spread_rates
from dlsched.workloads.base import Workload
from dlsched.workloads.gavel_types import gavel_scale, read_job_types, type_of_model

log = logging.getLogger(__name__)


def with_types(
    workload: Workload,
    server_types: Sequence[str],
    *,
    servers: tuple[Resources, ...] | None = None,
    seed: int = 0,
    speed_spread: float = 0.0,
    job_types: Mapping[int, str] | str | None = None,
) -> Workload:
    """``workload`` with GPU types ``server_types`` on its servers (or on ``servers``).

    ``job_types``: None or ``"drawn"``, ``"model"``, a CSV path, or a mapping job id -> Gavel
    job type (the module doc; a mapping's other jobs as ``drawn``).

    Raises:
        ValueError: a count of types that is not one per server, a type Gavel did not measure,
            or a ``job_types`` entry that is not one of Gavel's job types.
    """
    servers = workload.servers if servers is None else servers
    if len(server_types) != len(servers):
        raise ValueError(f"{len(server_types)} GPU types for {len(servers)} servers")
    types = tuple(dict.fromkeys(server_types))
    reference = types[0]
    measured = tuple(dict.fromkeys((*types, reference)))
    names = [j.name for j in JOB_TYPES]
    known = set(names)
    explicit, by_model = _mapping(job_types)
    rng = np.random.default_rng([seed, 2])
    profile: dict[int, dict[str, float]] = {}
    truth: dict[int, dict[str, float]] = {}
    for spec in workload.jobs:
        scale = 1
        if spec.job_id in explicit:
            kind = explicit[spec.job_id]
            if kind not in known:
                raise ValueError(f"job {spec.job_id}: {kind!r} is not one of Gavel's job types")
        elif by_model:
            kind = type_of_model(spec.model)
        elif spec.model in known:
            kind = spec.model
        else:
            kind = names[int(rng.integers(len(names)))]
        if by_model:
            scale = gavel_scale(kind, spec.num_workers, measured)
        rates = rates_of(kind, scale, measured)
        profile[spec.job_id] = {t: rates[t] / rates[reference] for t in types}
        truth[spec.job_id] = spread_rates(profile[spec.job_id], speed_spread, rng)
    model = TypedSpeed(workload.model, server_types, truth, estimated=profile)
    params = {**workload.params, "server_types": list(types), "speed_spread": speed_spread}
    if isinstance(job_types, str) and job_types != "drawn":
        params["job_types"] = job_types
    unmatched = len(set(explicit) - {spec.job_id for spec in workload.jobs})
    if unmatched:  # a filtered trace (VC, window, max_jobs) may leave some out: said, not fatal
        log.warning("job_types: %d listed job ids are not in the workload", unmatched)
        params["job_types_unmatched"] = unmatched
    return dataclasses.replace(
        workload,
        servers=tuple(servers),
        server_types=tuple(server_types),
        model=model,
        params=params,
    )


def _mapping(job_types: Mapping[int, str] | str | None) -> tuple[Mapping[int, str], bool]:
    """(explicit job id -> type, whether the other jobs are mapped by model and size)."""
    if job_types is None or job_types == "drawn":
        return {}, False
    if job_types == "model":
        return {}, True
    if isinstance(job_types, str):
        return read_job_types(job_types), True
    return job_types, False


def on_cluster(
    workload: Workload,
    cluster: str,
    *,
    seed: int = 0,
    speed_spread: float = 0.0,
    job_types: str = "drawn",
) -> Workload:
    """``workload`` on the servers of the spec ``cluster``, with its cores and memory per GPU,
    its jobs mapped to Gavel's job types as ``job_types`` says (`with_types`).

    Raises:
        ValueError: a bad spec, or a workload whose servers have no GPUs.
    """
    spec = ClusterSpec.parse(cluster, f"{workload.name}: cluster")
    first = workload.servers[0]
    if first.gpu <= 0:
        raise ValueError(f"{workload.name}: cluster= needs GPU servers; its servers have none")
    servers = spec.servers(first.cpu / first.gpu, first.mem / first.gpu)
    typed = with_types(
        workload,
        spec.server_types(),
        servers=servers,
        seed=seed,
        speed_spread=speed_spread,
        job_types=job_types,
    )
    return dataclasses.replace(typed, params={**typed.params, "cluster": str(spec)})
