"""Heuristic choosers over DeepRM's slots: the pre-training teachers and SJF's reference.

A `Chooser` picks one action per episode for given rows of a `DeepRMBatch` (the batch is stepped
by `dlsched.papers.deeprm.algorithm.run_batch`). `sjf_actions` is SJF on the slots (DeepRM's
code offers supervised pre-training on such a heuristic, ``pg_su.py``); `withholding_actions`
keeps room for short jobs (dlsched's teacher of the shipped policy); `tetris_star_actions` is
Tetris★ on the slots (a reference, as the authors' ``other_agents.py`` compares).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from dlsched.papers.deeprm.state import DeepRMBatch

Chooser = Callable[
    [DeepRMBatch, npt.NDArray[np.int64], npt.NDArray[np.bool_]], npt.NDArray[np.int64]
]
"""Picks actions for the given rows of a batch (whose masks are given)."""


def sjf_actions(
    batch: DeepRMBatch, rows: npt.NDArray[np.int64], _mask: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """SJF on the slots: the shortest job that fits now (earliest slot on ties), else ∅."""
    fits, first = batch.fits()
    now = fits[rows] & (first[rows] == 0)
    length = np.where(now, batch.slot_len[rows], np.iinfo(np.int64).max)
    best = length.argmin(1)
    return np.where(now.any(1), best + 1, 0)


LONG_JOB_STEPS = 10
"""`withholding_actions`: jobs of at least this many steps are long (the workload's long class)."""
BUSY_FRACTION = 0.5
"""`withholding_actions`: a resource this full (fraction of its slots in use now) is busy."""


def withholding_actions(
    batch: DeepRMBatch, rows: npt.NDArray[np.int64], _mask: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """SJF on the slots that withholds room for short jobs (DeepRM §4.3's finding, as a rule):
    the shortest job that fits now (earliest slot on ties), except that a long job
    (`LONG_JOB_STEPS`) is not started while a short job waits in a slot and some resource is
    at least `BUSY_FRACTION` used now; else ∅. A pre-training teacher (``teacher="withhold"``);
    its two constants were chosen on validation jobsets (seeds 800,000+), never on test ones."""
    fits, first = batch.fits()
    now = fits[rows] & (first[rows] == 0)
    length = batch.slot_len[rows]
    long = length >= LONG_JOB_STEPS
    short_waits = ((length > 0) & ~long).any(1)
    busy = batch.used[rows, 0].max(1) >= BUSY_FRACTION * batch.shape.res_slots
    now &= ~(long & (short_waits & busy)[:, None])
    length = np.where(now, length, np.iinfo(np.int64).max)
    return np.where(now.any(1), length.argmin(1) + 1, 0)


TETRIS_KNOB = 0.5
"""`tetris_star_actions`: weight of packing against shortness (`dlsched.schedulers.tetris_star`)."""


def tetris_star_actions(
    batch: DeepRMBatch, rows: npt.NDArray[np.int64], _mask: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """Tetris★ on the slots (the ``tetris-star`` scheduler's score, seeing only the slots, as
    DeepRM's code compares): among slot jobs that fit now, the highest ``knob · a / max(a) +
    (1 − knob) · s / max(s)``, ``a`` the dot product of demand and free capacity (fractions of
    capacity, now), ``s = 1 / duration`` (earliest slot on ties); else ∅."""
    fits, first = batch.fits()
    now = fits[rows] & (first[rows] == 0)
    cells = batch.shape.res_slots
    free = (cells - batch.used[rows, 0]) / cells  # (n, d), the current step
    align = np.where(now, (batch.slot_dem[rows] / cells * free[:, None, :]).sum(2), 0.0)
    short = np.where(now, 1.0 / np.maximum(batch.slot_len[rows], 1), 0.0)
    top_a = np.maximum(align.max(1, keepdims=True), 1e-12)
    top_s = np.maximum(short.max(1, keepdims=True), 1e-12)
    score = TETRIS_KNOB * align / top_a + (1.0 - TETRIS_KNOB) * short / top_s
    score = np.where(now, score, -np.inf)
    return np.where(now.any(1), score.argmax(1) + 1, 0)


TEACHERS: dict[str, Chooser] = {"sjf": sjf_actions, "withhold": withholding_actions}
"""Pre-training teachers by name."""
