"""Building a `Workload` from validated rows: model draw, cluster sizing and job specs."""

from __future__ import annotations

import contextlib
import datetime
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dlsched.core import Arch, JobSpec, Resources
from dlsched.workloads.base import Workload
from dlsched.workloads.traces.schema import (
    CPU_PER_GPU,
    MAX_SIZED_SERVERS,
    MEM_GB_PER_GPU,
    TARGET_UTILISATION,
    Table,
    TraceError,
)


def seconds_shown(values: npt.NDArray[np.float64], dated: bool) -> Callable[[int], Any]:
    """Shows submit time ``i`` as in the file: a number, or an ISO date for dated traces."""
    if dated:
        return lambda i: iso(float(values[i]))
    return lambda i: float(values[i])


def iso(unix_s: float) -> str:
    """``unix_s`` (s since 1970-01-01 UTC) as a UTC date and time, e.g. ``2017-10-03 12:34:56``."""
    if float(unix_s).is_integer():
        # pandas' text for a whole second, without importing pandas (CLI start-up, issue 34)
        with contextlib.suppress(OverflowError):
            return str(datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=int(unix_s)))
    import pandas as pd

    return str(pd.Timestamp(unix_s, unit="s", tz="UTC").tz_localize(None))


def draw_models(n: int, seed: int) -> npt.NDArray[np.str_]:
    """One model per row: a category by ``CATEGORY_MIX``, then a model of it uniformly."""
    from dlsched.models import locality

    categories = list(locality.CATEGORY_MIX)
    weights = np.array([locality.CATEGORY_MIX[c] for c in categories], dtype=np.float64)
    by_category = {
        c: sorted(m for m, cat in locality.CATEGORY.items() if cat == c) for c in categories
    }
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(categories), size=n, p=weights / weights.sum())
    slot = rng.random(n)
    # each row's index into every category's names in turn: a string array indexed once is
    # ~10x faster than filling an object array and converting it (start-up, issue 34)
    index = np.empty(n, dtype=np.int64)
    first = 0
    for k, c in enumerate(categories):
        where = picked == k
        index[where] = first + (slot[where] * len(by_category[c])).astype(np.int64)
        first += len(by_category[c])
    names = [m for c in categories for m in by_category[c]]
    widest = int(np.array([len(m) for m in names])[index].max()) if n else 1
    return np.array(names, dtype=f"<U{widest}")[index]  # as wide as the names drawn


# --------------------------------------------------------------------------------------------
# Reading files


def size_cluster(
    submit_s: npt.NDArray[np.float64] | Sequence[float],
    duration_s: npt.NDArray[np.float64] | Sequence[float],
    num_gpus: npt.NDArray[np.int64] | Sequence[int],
    gpus_per_server: int = 8,
    utilisation: float = TARGET_UTILISATION,
) -> int:
    """Servers a trace needs: the most of two counts, and at least 1.

    * the largest job fits: ``ceil(max(num_gpus) / gpus_per_server)``;
    * the average GPU demand is ``utilisation`` of the cluster:
      ``ceil(sum(num_gpus * duration) / horizon / utilisation / gpus_per_server)``, where the
      horizon is the longer of the submission span and the longest duration (seconds), so a
      trace whose jobs all arrive at once gets a cluster that could finish them in about the time
      of its longest job.

    Args:
        submit_s: submission times, seconds (any origin).
        duration_s: durations at full allocation, seconds.
        num_gpus: GPUs of each job.
        gpus_per_server: GPUs per server.
        utilisation: target share of the GPUs busy on average (0-1].
    """
    submit = np.asarray(submit_s, dtype=np.float64)
    duration = np.asarray(duration_s, dtype=np.float64)
    gpus = np.asarray(num_gpus, dtype=np.float64)
    if not len(gpus):
        return 1
    largest = math.ceil(float(gpus.max()) / gpus_per_server)
    horizon = max(float(submit.max() - submit.min()), float(duration.max()), 1.0)
    demand = float(np.dot(gpus, duration)) / horizon
    busy = math.ceil(demand / utilisation / gpus_per_server - 1e-9)
    return max(1, largest, busy)


def _refuse_absurd(table: Table, servers: int) -> None:
    """Refuse a sized cluster over `MAX_SIZED_SERVERS`, naming the job that weighs most."""
    if servers <= MAX_SIZED_SERVERS:
        return
    heaviest = int(np.argmax(table.num_gpus * table.duration_s))
    raise TraceError(
        f"{table.source}: sizing the cluster to this trace needs {servers:,} servers, more than"
        f" MAX_SIZED_SERVERS ({MAX_SIZED_SERVERS:,}); the heaviest job is row"
        f" {int(table.rows[heaviest])} (job {int(table.job_id[heaviest])},"
        f" {int(table.num_gpus[heaviest])} GPUs for {float(table.duration_s[heaviest]):g} s);"
        " give the cluster size (servers=, --servers) or spread the submissions",
        path=table.source,
        row=int(table.rows[heaviest]),
    )


def check_options(servers: int | None, gpus_per_server: int, load: float | None) -> None:
    if servers is not None and servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    if gpus_per_server < 1:
        raise ValueError(f"gpus_per_server must be >= 1, got {gpus_per_server}")
    if load is not None and not (math.isfinite(load) and load > 0):
        raise ValueError(f"load must be a positive number, got {load}")


def _job_specs(table: Table, submit: list[float]) -> list[JobSpec]:
    """The trace's jobs, submitted at ``submit`` (s)."""
    # One shared Resources per distinct (cpu, mem) request; positional JobSpec arguments in a
    # comprehension keep 82,247 Philly jobs to a fraction of a second.
    cache: dict[tuple[float, float], Resources] = {}
    demands = [
        cache.get(key) or cache.setdefault(key, Resources(1.0, key[0], key[1]))
        for key in zip(table.cpu.tolist(), table.mem_gb.tolist(), strict=True)
    ]
    no_ps = Resources()
    allreduce = Arch.ALLREDUCE
    return [
        JobSpec(jid, t, model, allreduce, work, demand, no_ps, g, 0, lo, hi, 0, prio)
        for jid, t, model, work, demand, g, lo, hi, prio in zip(
            table.job_id.tolist(),
            submit,
            table.model.tolist(),
            table.duration_s.tolist(),
            demands,
            table.num_gpus.tolist(),
            table.min_replicas.tolist(),
            table.max_replicas.tolist(),
            table.priority.tolist(),
            strict=True,
        )
    ]


def build_workload(
    table: Table,
    *,
    name: str,
    servers: int | None,
    gpus_per_server: int,
    seed: int,
    load: float | None,
    extra: Mapping[str, Any],
) -> Workload:
    from dlsched.models.locality import Locality

    sized = servers is None
    if servers is None:
        servers = size_cluster(table.submit_s, table.duration_s, table.num_gpus, gpus_per_server)
        _refuse_absurd(table, servers)
    origin = float(table.submit_s[0])
    shifted = table.submit_s - origin
    submit = (shifted / load if load is not None else shifted).tolist()
    jobs = _job_specs(table, submit)
    capacity = Resources(
        float(gpus_per_server), CPU_PER_GPU * gpus_per_server, MEM_GB_PER_GPU * gpus_per_server
    )
    params: dict[str, Any] = {
        "source": table.source,
        "seed": seed,
        "load": load,
        "servers": servers,
        "servers_sized_to_trace": sized,
        "gpus_per_server": gpus_per_server,
        "jobs": len(jobs),
        "origin": iso(origin) if table.dated else origin,
        "models": table.models_from,
        "skipped_rows": table.skipped,
        "skip_reasons": list(table.reasons),
        "blank_rows": table.blank_rows,
        "ignored_columns": list(table.ignored_columns),
        **extra,
    }
    if table.mapped:
        params["mapped_columns"] = dict(table.mapped)
    if table.inferred:
        params["inferred_columns"] = list(table.inferred)
    if table.trace_ids is not None:
        # The simulator's job ids are ints (the data row); this gives back the trace's own.
        params["trace_ids"] = dict(
            zip(table.job_id.tolist(), table.trace_ids.tolist(), strict=True)
        )
    if table.users is not None:  # per-user fairness (`dlsched.sim.fairness`); empty: unknown
        params["users"] = {
            job: user
            for job, user in zip(table.job_id.tolist(), table.users.tolist(), strict=True)
            if user
        }
    return Workload(
        name=name,
        jobs=tuple(jobs),
        servers=(capacity,) * servers,
        model=Locality(gpus_per_server=gpus_per_server),
        interval_s=None,
        on_events=True,
        placement="pack",
        params=params,
    )
