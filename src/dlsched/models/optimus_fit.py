"""`OptimusFit`: the parametric speed model Optimus fits online from observed speeds.

Optimus (Peng et al., EuroSys 2018, cited as [49] by DL2) models one synchronous training step
of a PS job with ``p`` parameter servers and ``w`` workers as computation plus communication:

    step_time(p, w) = θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p,      speed = 1 / step_time

``θ0·M/w`` is the forward/backward pass on a worker's share of the total batch ``M``; ``θ1`` a
constant overhead; ``θ2·w/p`` the push/pull traffic each PS serves; ``θ3·w`` and ``θ4·p``
per-worker and per-PS overheads. The θ are non-negative and fitted by non-negative least squares
(`scipy.optimize.nnls`) on ``1/speed``, i.e. in step-time units.

``M`` is the job's *total* (global) batch size in samples — for DL2 jobs the
``total_batch_size`` of its measurements, `dlsched.models.measured_ps.batch_sizes` (32 for
resnet-50, …); DL2 §3.1 keeps it fixed while workers change. ``M`` only rescales θ0, so any
positive constant gives the same predictions.

The speed unit is whatever the caller feeds (DL2's baselines feed epochs/s observed from
`JobRun.observed`); predictions come back in the same unit. Feed it **observed** samples only —
never the simulator's noise-free model — or the Optimus and OfflineRL baselines would be oracles.

With fewer than `MIN_CONFIGS` distinct (p, w) configurations the five θ are not identifiable, so
`fit` returns False and predictions use a fixed-shape prior scaled to the samples (see
`prior_theta`).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import numpy.typing as npt
from scipy.optimize import nnls

log = logging.getLogger(__name__)

NUM_PARAMS = 5
MIN_CONFIGS = NUM_PARAMS
"""Distinct (p, w) configurations needed to fit all five θ (one equation per unknown)."""

PRIOR_COMM = 0.25
"""Prior's communication weight: with one PS, one worker's push/pull takes a quarter of its
single-worker compute time. A generic guess, not fitted to any data."""


def features(batch_size: float, p: int, w: int) -> npt.NDArray[np.float64]:
    """The row ``(M/w, 1, w/p, w, p)`` multiplying θ in the step-time model."""
    return np.array([batch_size / w, 1.0, w / p, float(w), float(p)])


def prior_theta(batch_size: float) -> npt.NDArray[np.float64]:
    """The fallback's shape: ``step_time = 1/w + PRIOR_COMM·w/p`` (time unit: one worker's step).

    Compute shrinks linearly with workers; PS traffic grows with workers per PS. Scaled to the
    samples by `OptimusFit` before use.
    """
    return np.array([1.0 / batch_size, 0.0, PRIOR_COMM, 0.0, 0.0])


class OptimusFit:
    """Online fit of Optimus' speed model for one job.

    Usage: `add` every observed ``(p, w, speed)``, then `predict`. `fit` is called lazily by
    `predict` when samples were added since the last fit.

    * ≥ `MIN_CONFIGS` distinct configurations: full NNLS fit of the five θ; `fit` returns True.
    * 1 to `MIN_CONFIGS` − 1: the prior ``step_time = c·(M/w·θ0' + w/p·θ2')`` with the one scale
      ``c ≥ 0`` least-squares fitted to the observed step times; `fit` returns False.
    * none: the prior with ``c = 1`` (relative units: speed 0.8 at one PS and one worker);
      `fit` returns False.

    Args:
        batch_size: the job's total batch size ``M`` (samples), > 0.
    """

    def __init__(self, batch_size: float) -> None:
        if not batch_size > 0:
            raise ValueError(f"batch_size must be > 0, got {batch_size}")
        self.batch_size = float(batch_size)
        self._samples: list[tuple[int, int, float]] = []
        self._theta = prior_theta(self.batch_size)
        self._fitted = False
        self._dirty = False

    def add(self, p: int, w: int, speed: float) -> bool:
        """Record one observed speed (any positive unit) with ``p`` PS and ``w`` workers.

        Returns:
            False, and the sample is ignored, if ``speed`` is not a positive finite number
            (a job that made no progress tells nothing about its step time).

        Raises:
            ValueError: ``p`` or ``w`` below 1.
        """
        if p < 1 or w < 1:
            raise ValueError(f"OptimusFit needs p >= 1 and w >= 1, got p={p}, w={w}")
        if not (math.isfinite(speed) and speed > 0.0):
            log.debug("ignoring non-positive speed %r at p=%d, w=%d", speed, p, w)
            return False
        self._samples.append((int(p), int(w), float(speed)))
        self._dirty = True
        return True

    @property
    def num_samples(self) -> int:
        return len(self._samples)

    @property
    def num_configs(self) -> int:
        """Distinct (p, w) configurations observed."""
        return len({(p, w) for p, w, _ in self._samples})

    @property
    def theta(self) -> npt.NDArray[np.float64]:
        """Current θ0..θ4 (a copy; all ≥ 0), after a lazy refit."""
        self._refresh()
        return self._theta.copy()

    @property
    def fitted(self) -> bool:
        """Whether θ comes from a full fit (True) or the scaled prior (False)."""
        self._refresh()
        return self._fitted

    def fit(self) -> bool:
        """Refit θ from all samples; True if all five θ were fitted, False if the prior is used."""
        self._dirty = False
        if not self._samples:
            self._theta, self._fitted = prior_theta(self.batch_size), False
            return False
        a = np.array([features(self.batch_size, p, w) for p, w, _ in self._samples])
        y = np.array([1.0 / s for _, _, s in self._samples])
        if self.num_configs >= MIN_CONFIGS:
            norms = np.linalg.norm(a, axis=0)  # column scaling for conditioning; θ stays ≥ 0
            scaled, _ = nnls(a / norms, y)
            theta = scaled / norms
            if np.any(theta > 0):
                self._theta, self._fitted = theta, True
                return True
            log.warning("NNLS returned θ = 0; falling back to the prior")
        shape = prior_theta(self.batch_size)
        g = a @ shape
        scale = float(g @ y / (g @ g))
        self._theta, self._fitted = max(scale, 0.0) * shape, False
        return False

    def predict(self, p: int, w: int) -> float:
        """Predicted speed (the samples' unit) with ``p`` PS and ``w`` workers; 0 if either < 1."""
        if p < 1 or w < 1:
            return 0.0
        self._refresh()
        step = float(features(self.batch_size, p, w) @ self._theta)
        return 1.0 / step if step > 0.0 else 0.0

    def _refresh(self) -> None:
        if self._dirty:
            self.fit()
