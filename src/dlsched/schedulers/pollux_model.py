"""Pollux's per-job goodput model, fitted online (Pollux §3.2, §4.1): what a job learns itself.

Throughput: a step's compute time is linear in the local batch, ``T_acc = α_c + β_c·b``; its
network time is ``α_n + β_n·(r − 2)`` across nodes, ``α_r + β_r·(r − 2)`` within one node (none
for one replica); a synchronising step overlaps them, ``T_step = (T_acc^γ + T_net^γ)^(1/γ)``;
with ``s`` accumulation passes a step takes ``s·T_acc + T_step``. The seven parameters are
fitted to the (step time, sync time) the job has measured on the configurations it has run on
(root-mean-square log error plus Pollux's small priors), and parameters the observations cannot
identify stay at their lower bounds, as Pollux does.

Efficiency: from the job's latest gradient statistics (``grad_sqr``, ``grad_var``) at its
current batch size, ``E(B) = (var + sqr) / (var·B0/B + sqr) · B0/B``.

Goodput ``B / T(B) · E(B)``, maximised over Pollux's 50 geometric candidate batch sizes for a
given (nodes, replicas).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize

_LOWER = np.array([1e-8, 1e-8, 1e-8, 1e-8, 1e-8, 1e-8, 1.0])
_UPPER = np.array([np.inf, np.inf, np.inf, np.inf, np.inf, np.inf, 10.0])
_EPS = 1e-8
Array = npt.NDArray[np.float64]


def _network_s(p: Array, nodes: Array, replicas: Array) -> Array:
    rounds = np.maximum(replicas - 2, _EPS)
    inter = p[2] + p[3] * rounds
    intra = p[4] + p[5] * rounds
    return np.where(nodes > 1, inter, np.where(replicas > 1, intra, _EPS))


def _log_step_s(p: Array, accum: Array, network: Array) -> Array:
    g = p[6]
    return np.asarray(np.log(accum**g + network**g) / g)


def predict_step_s(
    p: Array, nodes: Array, replicas: Array, atomic_bsz: Array, accum_steps: Array
) -> Array:
    """Seconds per optimiser step under perf parameters ``p``."""
    accum = p[0] + p[1] * atomic_bsz
    step = np.exp(_log_step_s(p, accum, _network_s(p, nodes, replicas)))
    return np.asarray(accum_steps * accum + step)


def _objective(
    p: Array, x: tuple[Array, ...], acc_obs: Array, step_obs: Array
) -> tuple[float, Array]:
    """Pollux's fitting loss (RMS log errors plus priors) and its gradient in ``p``."""
    return _Loss(x, acc_obs, step_obs)(p)


class _Loss:
    """`_objective` on one fit's measurements, with what does not depend on ``p`` computed once
    (the optimiser calls it ~60 times a fit; each value is computed as `_objective` did)."""

    def __init__(self, x: tuple[Array, ...], acc_obs: Array, step_obs: Array) -> None:
        nodes, replicas, self.bsz = x
        self.n = len(self.bsz)
        self.rounds = np.maximum(replicas - 2, _EPS)
        self.inter, self.intra = nodes > 1, (nodes <= 1) & (replicas > 1)
        self.log_acc_obs, self.log_step_obs = np.log(acc_obs), np.log(step_obs)

    def __call__(self, p: Array) -> tuple[float, Array]:
        n, rounds, inter, intra = self.n, self.rounds, self.inter, self.intra
        total = np.add.reduce  # np.sum's and np.mean's sum, without their Python wrappers
        accum = p[0] + p[1] * self.bsz
        net = np.where(inter, p[2] + p[3] * rounds, np.where(intra, p[4] + p[5] * rounds, _EPS))
        g = p[6]
        ag, ng = accum**g, net**g
        u = ag + ng
        log_accum, log_u = np.log(accum), np.log(u)
        log_step = log_u / g
        r1 = log_accum - self.log_acc_obs
        r2 = log_step - self.log_step_obs
        err1 = math.sqrt(float(total(r1**2) / n))
        err2 = math.sqrt(float(total(r2**2) / n))
        reg = 1e-3 * (g - 1) ** 2 + 1e-2 * ((p[3] / p[2]) ** 2 + (p[5] / p[4]) ** 2)
        d1 = r1 / (n * max(err1, 1e-12))  # d err1 / d log accum
        d2 = r2 / (n * max(err2, 1e-12))  # d err2 / d log step
        d_accum = d1 / accum + d2 * ag / (accum * u)
        d_net = d2 * ng / (net * u)
        d_g = d2 * ((ag * log_accum + ng * np.log(net)) / (g * u) - log_u / g**2)
        d_inter, d_intra = d_net * inter, d_net * intra
        grad = np.array(
            [
                total(d_accum),
                total(d_accum * self.bsz),
                total(d_inter),
                total(d_inter * rounds),
                total(d_intra),
                total(d_intra * rounds),
                total(d_g),
            ]
        )
        grad[6] += 2e-3 * (g - 1)
        grad[3] += 2e-2 * p[3] / p[2] ** 2
        grad[2] -= 2e-2 * p[3] ** 2 / p[2] ** 3
        grad[5] += 2e-2 * p[5] / p[4] ** 2
        grad[4] -= 2e-2 * p[5] ** 2 / p[4] ** 3
        return err1 + err2 + float(reg), grad


_FITS: dict[tuple[bytes | None, ...], Array] = {}
_FITS_KEPT = 4096
"""Fits already made, by their exact inputs: jobs of one application that ran on the same
configurations in the same order refit the same measurements from the same start (in a Pollux
run 450 fits are 62 distinct ones); the fit is deterministic, so a repeat is looked up."""


def fit_perf_params(
    nodes: Array,
    replicas: Array,
    atomic_bsz: Array,
    accum_s: Array,
    step_s: Array,
    start: Array | None = None,
) -> Array:
    """Fit the seven throughput parameters to measured (accumulation, step) times, seconds.

    ``start``: the previous fit, to start from (a job refits after each new configuration).
    A fit of the exact same inputs as an earlier one returns (a copy of) that fit.
    """
    arrays = (nodes, replicas, atomic_bsz, accum_s, step_s, start)
    key = tuple(None if a is None else np.asarray(a, dtype=float).tobytes() for a in arrays)
    hit = _FITS.get(key)
    if hit is None:
        if len(_FITS) >= _FITS_KEPT:
            _FITS.clear()
        hit = _FITS[key] = _fit_perf_params(nodes, replicas, atomic_bsz, accum_s, step_s, start)
    return hit.copy()


def _fit_perf_params(
    nodes: Array,
    replicas: Array,
    atomic_bsz: Array,
    accum_s: Array,
    step_s: Array,
    start: Array | None,
) -> Array:
    p0 = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3]) if start is None else start.copy()
    lo, hi = _LOWER.copy(), _UPPER.copy()
    fixed: list[int] = []
    if len(np.unique(atomic_bsz)) == 1:
        p0[0] = lo[0] = hi[0] = float(np.mean(accum_s)) / 2
    if not np.any(nodes > 1):
        fixed += [2, 3]
    if not np.any((nodes == 1) & (replicas > 1)):
        fixed += [4, 5]
    if not np.any(replicas > 2):
        fixed += [3, 5]
    for i in fixed:
        p0[i] = hi[i] = lo[i]
    p0 = np.clip(p0, lo, hi)
    x = (nodes, replicas, atomic_bsz)
    result = minimize(
        _Loss(x, accum_s, step_s),
        p0,
        method="TNC",  # L-BFGS-B's per-iteration BLAS calls cost ~1 ms on a busy machine
        jac=True,
        bounds=list(zip(lo, hi, strict=True)),
        options={"maxfun": 300},
    )
    p = np.asarray(result.x, dtype=float)
    if not np.any(nodes > 1):  # prior: crossing nodes costs at least what staying inside does
        p[2] = max(p[2], p[4] * 1.1)
        p[3] = max(p[3], p[5] * 1.1)
    return p


@dataclass
class JobGoodputModel:
    """One job's fitted goodput model and the measurements behind it.

    Attributes:
        init_bsz, max_bsz: the job's initial (smallest) and largest total batch size.
        min_local, max_local: its local-batch bounds per GPU.
        profile: (nodes, replicas, atomic_bsz) → (step_s, sync_s) measured so far.
        grad: latest (grad_sqr, grad_var), None before any.
        params: fitted perf parameters, None before any measurement.
    """

    init_bsz: int
    max_bsz: int
    min_local: int
    max_local: int
    profile: dict[tuple[int, int, int], tuple[float, float]] = field(default_factory=dict)
    grad: tuple[float, float] | None = None
    params: Array | None = None
    _memo: dict[tuple[int, int], tuple[float, int, int]] = field(default_factory=dict)
    _rates: dict[tuple[int, int], Array] = field(default_factory=dict)
    _stacked: dict[tuple[tuple[int, int], ...], tuple[npt.NDArray[Any], ...]] = field(
        default_factory=dict
    )

    def observe(
        self, nodes: int, replicas: int, atomic_bsz: int, step_s: float, sync_s: float
    ) -> None:
        """Record a measured step (refits when the configuration is new)."""
        key = (nodes, replicas, atomic_bsz)
        if key in self.profile:
            return
        self.profile[key] = (step_s, sync_s)
        keys = np.array(list(self.profile), dtype=float)
        vals = np.array(list(self.profile.values()))
        self.params = fit_perf_params(
            keys[:, 0], keys[:, 1], keys[:, 2], vals[:, 0] - vals[:, 1], vals[:, 0], self.params
        )
        self._memo.clear()
        self._rates.clear()
        self._stacked.clear()

    def set_grad(self, sqr: float, var: float) -> None:
        """Record the latest gradient statistics."""
        if self.grad != (sqr, var):
            self.grad = (sqr, var)
            self._memo.clear()

    @property
    def max_profiled_replicas(self) -> int:
        return max((k[1] for k in self.profile), default=0)

    def efficiency(self, batch: Array) -> Array:
        if self.grad is None:
            return np.ones_like(batch)
        sqr, var = self.grad
        scale = batch / self.init_bsz
        denom = var / scale + sqr
        gain = np.where(denom > 0, (var + sqr) / np.where(denom > 0, denom, 1.0), 1.0)
        return np.asarray(gain / scale)

    def best_goodput(self, nodes: int, replicas: int) -> tuple[float, int, int]:
        """(goodput in samples/s, atomic_bsz, accum_steps) of the best batch at this size."""
        self._fill([(nodes, replicas)])
        return self._memo[nodes, replicas]

    def best_goodputs(self, sizes: list[tuple[int, int]]) -> list[float]:
        """Goodput (samples/s) of the best batch at each (nodes, replicas): `best_goodput`'s
        first element, the sizes not known yet computed together."""
        self._fill(sizes)
        return [self._memo[size][0] for size in sizes]

    def _fill(self, sizes: list[tuple[int, int]]) -> None:
        """Put the best batch of each size not in the memo there, all in one pass: the same
        element-wise arithmetic as one size at a time, on the sizes' candidates stacked."""
        todo: dict[tuple[int, int], None] = {}  # the sizes to compute, in order
        for nodes, replicas in sizes:
            if (nodes, replicas) in self._memo or (nodes, replicas) in todo:
                continue
            if self.params is None or replicas < 1 or self._grid(replicas) is None:
                self._memo[nodes, replicas] = (0.0, 0, 0)
            else:
                todo[nodes, replicas] = None
        if not todo:
            return
        key = tuple(todo)
        stacked = self._stacked.get(key)
        if stacked is None:  # the same sizes come back at every new gradient measurement
            parts = []
            for nodes, replicas in key:
                grid = self._grid(replicas)
                assert grid is not None
                atomic, accum, ok, true_batch = grid
                rate = self._rate(nodes, replicas, atomic, accum, true_batch)
                parts.append((ok, true_batch, rate, atomic, accum))
            stacked = tuple(np.stack(arrays) for arrays in zip(*parts, strict=True))
            self._stacked[key] = stacked
        ok, true_batch, rate, atomic, accum = stacked
        goodput = np.where(ok, rate * self.efficiency(true_batch), 0.0)
        best = np.argmax(goodput, axis=1)
        for row, (size, i) in enumerate(zip(key, best.tolist(), strict=True)):
            self._memo[size] = float(goodput[row, i]), int(atomic[row, i]), int(accum[row, i])

    def _grid(self, replicas: int) -> tuple[Array, Array, npt.NDArray[np.bool_], Array] | None:
        return _batch_grid(self.init_bsz, self.max_bsz, self.min_local, self.max_local, replicas)

    def _rate(
        self, nodes: int, replicas: int, atomic: Array, accum: Array, true_batch: Array
    ) -> Array:
        """Samples/s at each of this size's candidate batches (changes only at a refit)."""
        rate = self._rates.get((nodes, replicas))
        if rate is None:
            assert self.params is not None
            full = np.full_like
            step = predict_step_s(
                self.params, full(atomic, nodes), full(atomic, replicas), atomic, accum
            )
            rate = self._rates[nodes, replicas] = true_batch / step
        return rate


@functools.lru_cache(maxsize=4096)
def _batch_grid(
    init_bsz: int, max_bsz: int, min_local: int, max_local: int, replicas: int
) -> tuple[Array, Array, npt.NDArray[np.bool_], Array] | None:
    """Pollux's 50 geometric candidate batches on ``replicas`` GPUs: (atomic_bsz, accum_steps,
    whether the local batch fits, true total batch), or None if none fits (read-only arrays)."""
    low = max(init_bsz, min_local * replicas)
    if low > max_bsz:
        return None
    batch = np.geomspace(low, max_bsz, 50)
    local = batch / replicas
    accum = np.ceil(local / max_local - _EPS) - 1
    if replicas == 1:
        accum = np.where(local > init_bsz + _EPS, np.maximum(accum, 1), accum)
    atomic = np.ceil(local / (accum + 1) - _EPS)
    ok = (atomic >= min_local) & (atomic <= max_local)
    true_batch = replicas * atomic * (accum + 1)
    for array in (atomic, accum, ok, true_batch):
        array.flags.writeable = False
    return atomic, accum, ok, true_batch
