"""Fairness of a run: Themis' finish-time fairness per job, and fairness across users.

**Finish-time fairness** (Mahajan et al., *Themis: Fair and Efficient GPU Cluster
Scheduling*, NSDI'20, §3): ``ρ = T_shared / T_alone``, a job's completion time in the shared
cluster over its completion time had it run alone on a ``1/N`` share of the cluster, ``N``
the average number of jobs contending during its lifetime. ρ ≤ 1: the job did at least as
well as on its fair share; ρ > 1: worse. Our estimate of each term:

* ``T_shared`` — the job's JCT (finish − submit), seconds;
* ``N`` — the time-average number of jobs in the system (submitted, not finished; the job
  itself included) over ``[submit, finish]``, counted over the run's finished jobs (jobs cut
  off by a horizon are not counted);
* ``T_alone`` — its ideal duration (at its requested allocation, best placement, no wait:
  ``JobRecord.ideal_s``) when its requested GPUs fit in its fair share ``G/N`` of the
  cluster's ``G`` GPUs, else that duration stretched by ``gpus / (G/N)`` (a job given a
  fraction of the GPUs it asks for runs that much slower).

So ρ = slowdown ÷ max(1, gpus·N/G). A job asking for no GPUs (DeepRM's, on a cluster of two
abstract resources) is never stretched: its ρ is its slowdown (its share of CPU or memory is
not estimated).

**Per-user fairness**: each user's mean slowdown (JCT ÷ ideal duration), and Jain's index
``(Σx)²/(n·Σx²)`` over those means (1: every user slowed down alike; 1/n: one user bears it
all), beside the worst user's mean. Users come from the workload's ``params["users"]`` (job
id → user: your trace's ``user`` column); a job without one (every job of a workload without
users) is a user of its own, so the index is then Jain's over the jobs' slowdowns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from dlsched.sim.metrics import jain_index

Floats = npt.NDArray[np.float64]


def jobs_in_system(submit_s: Floats, finish_s: Floats) -> Floats:
    """Each job's time-average number of jobs in the system over its own ``[submit, finish]``
    (itself included; 1 for a job of zero length), from every job's interval."""
    starts, ends = np.sort(submit_s), np.sort(finish_s)
    starts_sum = np.concatenate(([0.0], np.cumsum(starts)))
    ends_sum = np.concatenate(([0.0], np.cumsum(ends)))

    def area(x: Floats) -> Floats:
        """∫₀ˣ N(t) dt = Σ_j (min(x, f_j) − s_j)⁺ = Σ_{s_j≤x}(x − s_j) − Σ_{f_j≤x}(x − f_j)."""
        began = np.searchsorted(starts, x, side="right")
        ended = np.searchsorted(ends, x, side="right")
        return (began * x - starts_sum[began]) - (ended * x - ends_sum[ended])

    length = finish_s - submit_s
    with np.errstate(invalid="ignore", divide="ignore"):
        average = (area(finish_s) - area(submit_s)) / length
    return np.where(length > 0, np.maximum(average, 1.0), 1.0)


def finish_time_fairness(
    submit_s: Floats, finish_s: Floats, ideal_s: Floats, gpus: Floats, cluster_gpus: float
) -> Floats:
    """Each job's ρ (module docstring); a cluster of unknown size (``cluster_gpus`` NaN) gives
    NaN."""
    if submit_s.size == 0:
        return np.zeros(0)
    if not cluster_gpus >= 0:
        return np.full(submit_s.size, np.nan)
    contenders = jobs_in_system(submit_s, finish_s)
    with np.errstate(invalid="ignore", divide="ignore"):
        stretch = np.where(gpus > 0, gpus * contenders / cluster_gpus, 1.0)
    alone_s = ideal_s * np.maximum(1.0, stretch)
    jct = finish_s - submit_s
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(alone_s > 0, jct / alone_s, np.where(jct > 0, np.inf, 1.0))


def user_slowdowns(
    job_ids: Sequence[int], slowdown: Floats, users: Mapping[int, str] | None
) -> list[float]:
    """Each user's mean slowdown (a job without a user is its own); NaN slowdowns left out."""
    by_user: dict[object, list[float]] = {}
    for job_id, value in zip(job_ids, slowdown.tolist(), strict=True):
        if value == value:  # not NaN
            user = (users or {}).get(job_id)
            by_user.setdefault(("job", job_id) if user is None else user, []).append(value)
    return [float(np.mean(values)) for values in by_user.values()]


def fairness_summary(
    job_ids: Sequence[int],
    submit_s: Floats,
    finish_s: Floats,
    ideal_s: Floats,
    slowdown: Floats,
    gpus: Floats,
    cluster_gpus: float,
    users: Mapping[int, str] | None,
) -> dict[str, float]:
    """The summary's fairness fields: ``avg_ftf_rho``/``max_ftf_rho`` (finish-time fairness,
    mean and worst), ``user_fairness`` (Jain's index over users' mean slowdown) and
    ``worst_user_slowdown``; NaN where there are no jobs (or, for ρ, no cluster size)."""
    rho = finish_time_fairness(submit_s, finish_s, ideal_s, gpus, cluster_gpus)
    finite = rho[~np.isnan(rho)]
    means = user_slowdowns(job_ids, slowdown, users)
    return {
        "avg_ftf_rho": float(finite.mean()) if finite.size else float("nan"),
        "max_ftf_rho": float(finite.max()) if finite.size else float("nan"),
        "user_fairness": jain_index(means) if means else float("nan"),
        "worst_user_slowdown": max(means) if means else float("nan"),
    }
