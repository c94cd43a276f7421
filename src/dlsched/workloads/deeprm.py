"""The DeepRM workload (DeepRM §4.1): two-resource packing with Bernoulli arrivals.

Every choice, with its source (§ = sections of Mao et al., HotNets 2016, seed 001; "code" = the
authors' simulator, GitHub ``hongzimao/deeprm``, files ``job_distribution.py``,
``environment.py`` and ``parameters.py``):

Cluster
    Two resources with capacity ``{1r, 1r}`` (§4.1), treated as one pool "ignoring machine
    fragmentation" (§3.1): one dlsched server is that pool. **Unit**: one *slot* is ``r / 20``,
    so a server is ``Resources(gpu=0, cpu=20, mem=20)`` — the ``cpu`` and ``mem`` fields hold
    slots of the paper's first and second resource, not cores and GB. Twenty slots make every
    demand bound of §4.1 a whole number (0.05r = 1, 0.1r = 2, 0.25r = 5, 0.5r = 10), like the
    code's integer slots (``res_slot``), so DeepRM's images show demands exactly.
    ``servers = k`` gives ``k`` such pools, and ``load`` is then relative to all of them.

Jobs (§4.1)
    * 80 % of jobs are short, with a duration uniform in 1t..3t; the rest are long, uniform in
      10t..15t. Durations are whole time steps, as in the code (``np.random.randint``): uniform
      over {1, 2, 3} and {10, …, 15}, whose means (2t and 12.5t) equal the continuous ranges'.
    * Each job has a dominant resource, picked independently and uniformly among the two; its
      demand is uniform in 0.25r..0.5r (5..10 slots), the other's in 0.05r..0.1r (1..2 slots),
      whole slots uniformly (means 0.375r and 0.075r, as for the continuous ranges).
      ``demands="code"`` draws the authors' code's ranges instead (``job_distribution.py``:
      ``max_job_size / 2 .. max_job_size`` and ``1 .. max_job_size / 5`` of ``res_slot = 10``,
      i.e. 0.5r..1.0r and 0.1r..0.2r): the same draws, doubled (10..20 and 2..4 slots, even
      numbers only), so a given load brings half as many jobs (see Arrivals).
    * One task a job, never preempted, fixed allocation (§3.1): ``arch = Arch.REPLICA``,
      ``num_workers = min_workers = max_workers = 1``, speed from `FixedDuration`.
      ``model`` is ``"short"`` or ``"long"`` (its duration class; §4.3 Fig. 7 compares them).
    * **Time step**: 1t = `STEP_S` = 1 second, so ``total_work`` (seconds at speed 1) equals the
      duration in steps, and jobs arrive at whole seconds.

Arrivals and load
    * Jobs arrive "according to a Bernoulli process" (§4.1): at each time step one job arrives
      with probability ``p`` (code: ``np.random.rand() < new_job_rate``).
    * **Load** as the code measures it (``environment.py``): per resource, the sum over jobs of
      demand × duration, divided by capacity and by the number of time steps of arrivals. Its
      expectation is ``λ · E[duration] · E[demand] / capacity`` with ``λ`` jobs a step,
      ``E[duration] = 0.8·2 + 0.2·12.5 = 4.1`` steps and ``E[demand] = (0.375 + 0.075) / 2 =
      0.225r`` on either resource, so ``λ = load · servers / 0.9225`` (`arrivals_per_step`).
    * §4.1 varies load from 10 % to 190 %. With the demand ranges of §4.1's text a Bernoulli
      process (at most one job a step) reaches at most 92.25 %. (The code reaches 184.5 %
      because its demands are twice the text's: 0.5–1.0 and 0.1–0.2 of capacity.) We keep the
      text's demands and extend the process above ``λ = 1``: each step brings ``floor(λ)`` jobs
      plus one more with probability ``λ - floor(λ)``. For ``load <= 0.9225`` (default 0.7:
      ``p = 0.759``) this is exactly a Bernoulli process. At load 1.9 the text's demands bring
      ``λ = 2.06`` jobs a step, the code's (``demands="code"``, ``λ = load / 1.845``) 1.03:
      DeepRM's 10 arrival-order slots then hold about 5 steps of arrivals instead of 10
      (``benchmarks/deeprm_authors_setting.py``).
    * **Length**: by default DeepRM's jobsets ("each experiment lasts for 50t", §4.1): exactly
      ``horizon_steps`` = 50 steps of arrivals however many jobs they bring (the workload may
      even be empty); or, with ``num_jobs`` given and no ``horizon_steps``, that many jobs
      (steps are drawn until that many have arrived: a long jobset, e.g. ``-o num_jobs=200``).
      Times are not shifted: a job arriving at step ``t`` is submitted at ``t · STEP_S``
      seconds.

Default setting = the paper's (what DeepRM §4 evaluates and the shipped ``deeprm`` policy is
meant for): load 0.7, one pool, 50-step jobsets, a scheduling point every step. The shipped
policy (`dlsched.papers.deeprm.policy.DEFAULT_POLICY`) was trained for loads 0.3–1.9 on both
50-step and 200-job jobsets; its ``card.json`` says so and a run outside that logs a notice.

Settings: ``model = FixedDuration()``, ``on_events = True`` (DeepRM decides whenever time moves
or a job arrives, §3.2), ``placement = "pack"``, no noise; ``interval_s = STEP_S`` for
``horizon_steps`` jobsets (DeepRM's agent acts every step, so heuristics and the policy get a
scheduling point at each), ``None`` (event-driven only) for ``num_jobs`` jobsets.

All randomness comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import numpy.typing as npt

from dlsched.core import Arch, JobSpec, Resources
from dlsched.models.fixed import FixedDuration
from dlsched.workloads.base import Workload

log = logging.getLogger(__name__)

SLOTS_PER_R = 20
"""Slots in one unit ``r`` of a resource (the unit of ``Resources.cpu`` and ``.mem`` here)."""
POOL = Resources(gpu=0.0, cpu=float(SLOTS_PER_R), mem=float(SLOTS_PER_R))
"""DeepRM's cluster, ``{1r, 1r}``, in slots."""
DEFAULT_SERVERS = 1
STEP_S = 1.0
"""Length of one DeepRM time step ``t``, seconds."""

SHORT_FRAC = 0.8
SHORT_STEPS = (1, 3)
LONG_STEPS = (10, 15)
DOMINANT_SLOTS = (5, 10)
OTHER_SLOTS = (1, 2)
"""Inclusive ranges: durations in steps, demands in slots (§4.1)."""

DEFAULT_LOAD = 0.7
DEFAULT_HORIZON_STEPS = 50
"""Steps of arrivals of a default jobset (DeepRM §4.1: "each experiment lasts for 50t")."""


def _mean(bounds: tuple[int, int]) -> float:
    return (bounds[0] + bounds[1]) / 2.0


MEAN_DURATION_STEPS = SHORT_FRAC * _mean(SHORT_STEPS) + (1.0 - SHORT_FRAC) * _mean(LONG_STEPS)
"""4.1 steps."""
MEAN_DEMAND_R = (_mean(DOMINANT_SLOTS) + _mean(OTHER_SLOTS)) / 2.0 / SLOTS_PER_R
"""0.225 r on each resource (dominant on half the jobs)."""


DEMAND_SCALES = {"text": 1, "code": 2}
"""``demands`` option → factor on §4.1's demand draws (the authors' code's are twice the text's)."""


def arrivals_per_step(load: float, servers: int = DEFAULT_SERVERS, demands: str = "text") -> float:
    """Mean jobs a time step (``λ``) that offer ``load`` of ``servers`` pools' capacity."""
    return load * servers / (MEAN_DURATION_STEPS * MEAN_DEMAND_R * DEMAND_SCALES[demands])


def _counts(rng: np.random.Generator, lam: float, steps: int) -> npt.NDArray[np.int64]:
    """Jobs arriving at each of ``steps`` steps: ``floor(λ)`` plus Bernoulli(``λ - floor(λ)``)."""
    whole = math.floor(lam)
    extra = rng.random(steps) < lam - whole
    return (whole + extra).astype(np.int64)


def _counts_until(rng: np.random.Generator, lam: float, num_jobs: int) -> npt.NDArray[np.int64]:
    """Per-step arrivals until ``num_jobs`` jobs have arrived (the last step trimmed)."""
    chunk = min(1 << 20, max(64, int(2 * num_jobs / lam)))
    parts: list[npt.NDArray[np.int64]] = []
    total = 0
    while total < num_jobs:
        counts = _counts(rng, lam, chunk)
        parts.append(counts)
        total += int(counts.sum())
    counts = np.concatenate(parts)
    cumulative = np.cumsum(counts)
    last = int(np.searchsorted(cumulative, num_jobs))
    counts = counts[: last + 1].copy()
    counts[last] -= int(cumulative[last]) - num_jobs
    return counts


def _check_arguments(
    servers: int, load: float, num_jobs: int | None, horizon_steps: int | None, demands: str
) -> None:
    """`make_deeprm`'s ValueErrors, before anything is drawn."""
    if demands not in DEMAND_SCALES:
        raise ValueError(f"demands must be one of {sorted(DEMAND_SCALES)}, got {demands!r}")
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    if not (load > 0 and math.isfinite(load)):
        raise ValueError(f"load must be a finite number > 0, got {load}")
    if horizon_steps is None and num_jobs is not None and num_jobs < 1:
        raise ValueError(f"num_jobs must be >= 1, got {num_jobs}")
    if horizon_steps is not None and horizon_steps < 1:
        raise ValueError(f"horizon_steps must be >= 1, got {horizon_steps}")


FIXED_PARAMS: dict[str, object] = {
    "step_s": STEP_S,
    "slots_per_r": SLOTS_PER_R,
    "server_capacity": POOL.as_tuple(),
    "short_frac": SHORT_FRAC,
    "short_steps": SHORT_STEPS,
    "long_steps": LONG_STEPS,
    "dominant_slots": DOMINANT_SLOTS,
    "other_slots": OTHER_SLOTS,
}
"""The generator's constants, in every workload's ``params``."""

Ints = npt.NDArray[np.int64]


def _jobs_drawn(
    rng: np.random.Generator, n: int, scale: int = 1
) -> tuple[npt.NDArray[np.bool_], Ints, Ints, Ints]:
    """(short?, duration in steps, CPU slots, memory slots) of ``n`` jobs, drawn in this order:
    the workload of a seed depends on it. ``scale`` multiplies the demands drawn
    (`DEMAND_SCALES`)."""
    short = rng.random(n) < SHORT_FRAC
    duration = np.where(
        short,
        rng.integers(SHORT_STEPS[0], SHORT_STEPS[1] + 1, n),
        rng.integers(LONG_STEPS[0], LONG_STEPS[1] + 1, n),
    )
    dominant_is_cpu = rng.integers(0, 2, n) == 0
    dominant = rng.integers(DOMINANT_SLOTS[0], DOMINANT_SLOTS[1] + 1, n)
    other = rng.integers(OTHER_SLOTS[0], OTHER_SLOTS[1] + 1, n)
    cpu = np.where(dominant_is_cpu, dominant, other) * scale
    mem = np.where(dominant_is_cpu, other, dominant) * scale
    return short, duration, cpu, mem


def _params(
    seed: int, servers: int, load: float, n: int, steps: int, lam: float, demands: str
) -> dict[str, object]:
    """The workload's ``params``; ``demands`` only when not the default, so that default
    workloads' params (which records and fingerprints compare) are unchanged."""
    params: dict[str, object] = {
        "seed": seed,
        "servers": servers,
        "load": load,
        "num_jobs": n,
        "horizon_steps": steps,
        "arrivals_per_step": lam,
        **FIXED_PARAMS,
    }
    if demands != "text":
        params["demands"] = demands
    return params


def make_deeprm(
    seed: int,
    *,
    servers: int | None = None,
    load: float | None = None,
    num_jobs: int | None = None,
    horizon_steps: int | None = None,
    demands: str = "text",
) -> Workload:
    """Generate one DeepRM jobset (see the module docstring for every choice and its source).

    Args:
        seed: seeds ``numpy.random.default_rng``, the only randomness.
        servers: resource pools of ``{1r, 1r}`` (20 slots each); None → 1, DeepRM's cluster.
        load: offered load as a fraction of the cluster's capacity, per resource (§4.1 uses 0.1
            to 1.9); None → 0.7.
        num_jobs: jobs in the workload (used when ``horizon_steps`` is None; a long jobset).
        horizon_steps: arrivals cover exactly this many time steps (DeepRM's fixed episode
            length) and ``num_jobs`` is not used; None with ``num_jobs`` None → 50, the paper's.
        demands: ``"text"`` (§4.1's ranges, the default) or ``"code"`` (the authors' code's,
            twice as large; the workload's ``params`` then say ``demands="code"``).

    Returns:
        The workload: one-task jobs with ``total_work`` = duration in seconds, the pools,
        `FixedDuration`, ``pack`` placement, event-driven scheduling plus a point every step
        for ``horizon_steps`` jobsets.

    Raises:
        ValueError: ``servers``, ``num_jobs`` or ``horizon_steps`` below 1, ``load`` not a
            finite number > 0, or ``demands`` neither ``"text"`` nor ``"code"``.
    """
    servers = DEFAULT_SERVERS if servers is None else servers
    load = DEFAULT_LOAD if load is None else load
    _check_arguments(servers, load, num_jobs, horizon_steps, demands)
    if horizon_steps is None and num_jobs is None:
        horizon_steps = DEFAULT_HORIZON_STEPS

    rng = np.random.default_rng(seed)
    lam = arrivals_per_step(load, servers, demands)
    if horizon_steps is None:
        assert num_jobs is not None
        counts = _counts_until(rng, lam, num_jobs)
    else:
        counts = _counts(rng, lam, horizon_steps)
    steps = np.repeat(np.arange(len(counts)), counts)
    n = len(steps)

    short, duration, cpu, mem = _jobs_drawn(rng, n, DEMAND_SCALES[demands])

    jobs = tuple(
        JobSpec(
            job_id=i,
            submit_time_s=float(steps[i]) * STEP_S,
            model="short" if short[i] else "long",
            arch=Arch.REPLICA,
            total_work=float(duration[i]) * STEP_S,
            worker_demand=Resources(gpu=0.0, cpu=float(cpu[i]), mem=float(mem[i])),
            num_workers=1,
            min_workers=1,
            max_workers=1,
        )
        for i in range(n)
    )
    log.debug("deeprm seed=%d: %d jobs over %d steps, λ=%.3f", seed, n, len(counts), lam)
    params = _params(seed, servers, load, n, len(counts), lam, demands)
    return Workload(
        name="deeprm",
        jobs=jobs,
        servers=(POOL,) * servers,
        model=FixedDuration(),
        interval_s=None if horizon_steps is None else STEP_S,
        on_events=True,
        placement="pack",
        params=params,
    )
