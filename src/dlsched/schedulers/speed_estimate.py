"""Speed estimates for PS jobs from what a scheduler can observe, or from the oracle.

`ObservedSpeeds` fits Optimus' step-time model (`dlsched.models.optimus_fit.OptimusFit`) to the
``(num_ps, num_workers, speed)`` samples the engine records in `JobRun.observed` — measured
speeds, interference noise included — and never reads the simulator's speed function:

* a job's own fit once it has seen `MIN_CONFIGS` distinct (PS, workers) configurations, so all
  five θ are identified;
* before that, the fit pooled over every job of the same model seen in this episode (jobs of one
  model share a speed curve; a real scheduler knows each job's model, and Optimus warms up a new
  job's model from sample runs for the same reason);
* for a model never observed yet, the fit pooled over all jobs (Optimus' prior shape scaled to
  every sample; only relative predictions make sense then).

Speeds are in the samples' unit (epochs/s for DL2 jobs). With ``measured_first=True`` a
configuration that jobs of the model have been measured at `MIN_MEASURED` times or more is
answered by the mean of those measurements (noise has mean 1, so the mean is unbiased), and the
fit elsewhere is scaled to agree with that mean at the job's current configuration — the fit
then only supplies the *shape* around where the job runs, which is where Optimus' model is least
wrong. With ``config_fit=True`` a model's pooled fit is instead made, once the model has been
seen in `MIN_CONFIGS` configurations, on one row per configuration — its mean measured speed —
minimising *relative* step-time error: every configuration counts the same however often it ran,
so the few runs at larger settings shape the fit as much as the many at the usual one (with raw
samples the most-run configuration dominates and the fit says little about adding workers); it
is then preferred to a job's own fit.
`OracleSpeeds` answers the same question from ``view.oracle_speed`` for schedulers
labelled ``is_oracle``.

Fits are refreshed lazily: a pooled fit is refitted only when its samples grew by
`REFIT_GROWTH` since its last fit (a few NNLS solves an episode however long it runs).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np
import numpy.typing as npt

from dlsched.core import Allocation, ClusterView, JobRun, JobSpec
from dlsched.models.optimus_fit import MIN_CONFIGS, OptimusFit, features

BATCH = 1.0
"""Optimus' total batch size ``M``; it only rescales θ0, so one constant serves every job."""

REFIT_GROWTH = 1.25
"""Refit a fit once its samples grew by this factor (or gained a configuration)."""

MIN_MEASURED = 2
"""Measurements of a (model, PS, workers) configuration before their mean replaces the fit."""


class SpeedFn(Protocol):
    """Estimated speed (work units/s) of a job with ``num_ps`` PS and ``num_workers`` workers."""

    def __call__(self, run: JobRun, num_ps: int, num_workers: int) -> float: ...


class _Fit:
    """An `OptimusFit` with a cached θ (as Python floats) refreshed as samples grow."""

    __slots__ = ("configs", "fit", "n_at_refit", "theta")

    def __init__(self) -> None:
        self.fit = OptimusFit(BATCH)
        self.configs: set[tuple[int, int]] = set()
        self.n_at_refit = -1
        self.theta: tuple[float, float, float, float, float] = (0.0,) * 5

    def add(self, num_ps: int, num_workers: int, speed: float) -> None:
        if num_ps >= 1 and num_workers >= 1 and self.fit.add(num_ps, num_workers, speed):
            self.configs.add((num_ps, num_workers))

    @property
    def num_samples(self) -> int:
        return self.fit.num_samples

    def current(self) -> tuple[float, float, float, float, float]:
        n = self.fit.num_samples
        if n != self.n_at_refit and (
            self.n_at_refit < 0 or n >= REFIT_GROWTH * self.n_at_refit or n < 2 * MIN_CONFIGS
        ):
            self.fit.fit()
            t0, t1, t2, t3, t4 = (float(x) for x in self.fit.theta)
            self.theta = (t0, t1, t2, t3, t4)
            self.n_at_refit = n
        return self.theta


def step_time(theta: tuple[float, float, float, float, float], num_ps: int, w: int) -> float:
    """Optimus' step time ``θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p`` (θ's time unit)."""
    t0, t1, t2, t3, t4 = theta
    return t0 * BATCH / w + t1 + t2 * w / num_ps + t3 * w + t4 * num_ps


class ObservedSpeeds:
    """Per-job and pooled Optimus fits of observed speeds (module docstring).

    Call `update` with the active jobs at every decision (it reads only samples added since
    the last call), then ask `speed` / `theta`. Call `reset` between episodes.

    Args:
        measured_first: answer from the mean measured speed where a configuration of the model
            was measured at least `MIN_MEASURED` times (module docstring).
        config_fit: fit each model's pool to its per-configuration mean speeds, by relative
            error (module docstring).
    """

    def __init__(self, measured_first: bool = False, config_fit: bool = False) -> None:
        self.measured_first = measured_first
        self.config_fit = config_fit
        self._config_theta: dict[str, tuple[int, tuple[float, float, float, float, float]]] = {}
        self._measured: dict[str, dict[tuple[int, int], list[float]]] = {}
        self._versions: dict[str, int] = {}
        self._jobs: dict[int, _Fit] = {}
        self._seen: dict[int, int] = {}
        self._models: dict[str, _Fit] = {}
        self._all = _Fit()

    def reset(self) -> None:
        """Forget every sample (a new episode)."""
        self._measured.clear()
        self._versions.clear()
        self._config_theta.clear()
        self._jobs.clear()
        self._seen.clear()
        self._models.clear()
        self._all = _Fit()

    def update(self, runs: Iterable[JobRun]) -> None:
        """Feed the samples each job observed since the last call."""
        for run in runs:
            seen = self._seen.get(run.job_id, 0)
            observed = run.observed
            if len(observed) <= seen:
                continue
            own = self._jobs.get(run.job_id)
            if own is None:
                own = self._jobs[run.job_id] = _Fit()
            pool = self._models.get(run.spec.model)
            if pool is None:
                pool = self._models[run.spec.model] = _Fit()
            measured = self._measured.setdefault(run.spec.model, {})
            self._versions[run.spec.model] = self._versions.get(run.spec.model, 0) + 1
            for p, w, speed in observed[seen:]:
                own.add(p, w, speed)
                pool.add(p, w, speed)
                self._all.add(p, w, speed)
                total = measured.setdefault((p, w), [0.0, 0.0])
                total[0] += 1
                total[1] += speed
            self._seen[run.job_id] = len(observed)

    def theta(self, spec: JobSpec) -> tuple[float, float, float, float, float]:
        """θ of the fit that speaks for ``spec``: own, model pool or global pool — with
        ``config_fit``, the model's per-configuration fit first (jobs of one model share a
        speed curve, and one job's own raw samples are few and noisy)."""
        if self.config_fit:
            theta = self._fit_configs(spec.model)
            if theta is not None:
                return theta
        own = self._jobs.get(spec.job_id)
        if own is not None and len(own.configs) >= MIN_CONFIGS:
            return own.current()
        pool = self._models.get(spec.model)
        if pool is not None and pool.num_samples:
            return pool.current()
        return self._all.current()

    def _fit_configs(self, model: str) -> tuple[float, float, float, float, float] | None:
        """θ fitted to ``model``'s mean speed per configuration, relative error; None if it has
        fewer than `MIN_CONFIGS` configurations (or NNLS gives θ = 0). Cached per version."""
        measured = self._measured.get(model, {})
        if len(measured) < MIN_CONFIGS:
            return None
        version = self.version(model)
        cached = self._config_theta.get(model)
        if cached is not None and cached[0] == version:
            return cached[1]
        # row (features · mean speed) · θ ≈ 1: the step-time error relative to the mean's
        rows = np.array([features(BATCH, p, w) * (t / n) for (p, w), (n, t) in measured.items()])
        norms = np.linalg.norm(rows, axis=0)
        norms[norms == 0] = 1.0
        from scipy.optimize import nnls  # SciPy's import costs ~0.5 s: only when fitting

        scaled, _ = nnls(rows / norms, np.ones(len(rows)))
        x = scaled / norms
        if not np.any(x > 0):
            return None
        theta = (float(x[0]), float(x[1]), float(x[2]), float(x[3]), float(x[4]))
        self._config_theta[model] = (version, theta)
        return theta

    def version(self, model: str) -> int:
        """Changes whenever jobs of ``model`` brought new samples (for callers' caches)."""
        return self._versions.get(model, 0)

    def measured(self, model: str, num_ps: int, num_workers: int) -> float | None:
        """Mean measured speed of ``model`` at these counts, if measured often enough."""
        total = self._measured.get(model, {}).get((num_ps, num_workers))
        if total is None or total[0] < MIN_MEASURED:
            return None
        return total[1] / total[0]

    def speed(self, run: JobRun, num_ps: int, num_workers: int) -> float:
        """Estimated speed with these counts (samples' unit); 0 without a PS or a worker."""
        if num_ps < 1 or num_workers < 1:
            return 0.0
        spec = run.spec
        if self.measured_first:
            mean = self.measured(spec.model, num_ps, num_workers)
            if mean is not None:
                return mean
        theta = self.theta(spec)
        step = step_time(theta, num_ps, num_workers)
        fitted = 1.0 / step if step > 0 else 0.0
        here = run.allocation
        if self.measured_first and here.num_ps >= 1 and here.num_workers >= 1:
            mean = self.measured(spec.model, here.num_ps, here.num_workers)
            step_here = step_time(theta, here.num_ps, here.num_workers)
            if mean is not None and step_here > 0:
                fitted *= mean * step_here  # scale the fit to the measurement where it runs
        return fitted

    def speed_grid(self, spec: JobSpec, max_ps: int, max_workers: int) -> npt.NDArray[np.float64]:
        """Estimated speeds for every ``(p, w)`` in ``1..max_ps × 1..max_workers``.

        The fit, with measured means in place where ``measured_first`` (no local scaling).

        Returns:
            ``(max_ps, max_workers)`` array; entry ``[p - 1, w - 1]`` is the speed at (p, w).
        """
        t0, t1, t2, t3, t4 = self.theta(spec)
        p = np.arange(1, max_ps + 1, dtype=np.float64)[:, None]
        w = np.arange(1, max_workers + 1, dtype=np.float64)[None, :]
        step = t0 * BATCH / w + t1 + t2 * w / p + t3 * w + t4 * p
        grid = np.where(step > 0, 1.0 / np.where(step > 0, step, 1.0), 0.0)
        if self.measured_first:
            for (ps, workers), (count, total) in self._measured.get(spec.model, {}).items():
                if count >= MIN_MEASURED and ps <= max_ps and workers <= max_workers:
                    grid[ps - 1, workers - 1] = total / count
        return grid


class OracleSpeeds:
    """ORACLE: true noise-free speeds from ``view.oracle_speed`` (only for ``is_oracle``).

    Tasks are put on one server for the question: PS speed models (`MeasuredPS`) depend on the
    counts only.
    """

    def __init__(self, view: ClusterView) -> None:
        self._view = view
        self._cache: dict[tuple[int, int, int], float] = {}

    def speed_grid(self, spec: JobSpec, max_ps: int, max_workers: int) -> npt.NDArray[np.float64]:
        """True speeds for every ``(p, w)`` in ``1..max_ps × 1..max_workers`` (as
        `ObservedSpeeds.speed_grid`)."""
        return np.array(
            [
                [
                    self._view.oracle_speed(spec, Allocation.of([(0, w)], [(0, p)]))
                    for w in range(1, max_workers + 1)
                ]
                for p in range(1, max_ps + 1)
            ],
            dtype=np.float64,
        ).reshape(max_ps, max_workers)

    def __call__(self, run: JobRun, num_ps: int, num_workers: int) -> float:
        key = (run.job_id, num_ps, num_workers)
        value = self._cache.get(key)
        if value is None:
            alloc = Allocation.of([(0, num_workers)], [(0, num_ps)])
            value = self._cache[key] = self._view.oracle_speed(run.spec, alloc)
        return value
