"""`Dl2SlotEnv`: DL2's problem with one environment step per time slot (``dlsched/DL2Slot-v0``).

`Dl2Env` decides a slot by tens of small actions, so a library's discount γ applies per
*action*: with the ``jct`` reward (negative) every extra action in a slot postpones — and so
discounts — the cost of all later slots, and MaskablePPO learns to pad slots with useless
parameter servers (benchmarks/RESULTS.md, issue 19). Here one step is one whole slot, so γ is
per slot, as in DL2's own trainer (§4.2).

* **Observation space**: `Dl2Env`'s, ``Box(0, 10, (obs_dim,), float32)`` (724 by default): the
  ``J`` job rows of the slot's first batch (arrival order) with nothing allocated yet, and the
  free resource fractions (`dlsched.papers.dl2.state`).
* **Action space** with ``per="job"``: ``MultiDiscrete([K] * J)`` (``K = len(LEVELS)`` = 5,
  ``J`` = 40 rows by default): one level per job row, the shape of that job's *units*:
  ``LEVELS[k]`` = (1 worker, 1 PS), (1, 2), (1, 3), (2, 1) or (2, 3) — a job without parameter
  servers adds one worker a unit whatever its level. The environment hands out units round
  robin, one per job per round in arrival order (a unit that does not fit whole is added as far
  as it fits), until no job can take more (its limits, or no room); jobs beyond the ``J`` rows
  then share what is left the same way with (1, 1) units. So every job that fits runs (the
  cluster is never left idle with jobs waiting), level 0 everywhere is DRF's allocation (with at
  most ``J`` active jobs), and a policy learns the worker:PS shape that suits each job. Mask
  (`action_masks`, sb3-contrib's flat ``J·K`` convention): every level of a present row, only
  level 0 for an empty row. ``per="type"`` (the default): ``MultiDiscrete([K] * L)``, one level
  per job *type* (``L`` = 8) that every job of the type takes (the jobs beyond the rows too): 8
  choices a step instead of 40, which a library learns from far more cheaply (SB3 builds one
  distribution a dimension; the README's example and figure use it).
* **Reward** (paid every step): minus the job-seconds spent in the system during the slot
  (`dlsched.rl.time_in_system`) ÷ (slot length × ``J``): minus the mean number of jobs in the
  system over the slot, ÷ ``J``, so O(1). Its undiscounted sum over an episode is
  ``−Σ_j JCT_j / (1200 s × J)`` (Little's law): maximising the plain return minimises average
  JCT.
* **Episode end**: as `Dl2Env` with ``reward="jct"``: ``terminated`` when every job finished
  (or on a stall, which also charges the unfinished jobs up to ``max_slots``), ``truncated``
  after ``max_slots`` slots.

`Dl2LevelEncoder` applies the same levels in `dlsched.simulate` (through
`dlsched.rl.adapter.PolicyAdapter`), so a policy trained here is evaluated with ``compare``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from dlsched.core import Arch, ClusterView, Decision, JobRun
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.dl2.state import ADD_BOTH, ADD_PS, ADD_WORKER, Dl2Shape, Dl2Slot
from dlsched.rl.actions import EPISODE_OVER, multi_discrete_action
from dlsched.rl.time_in_system import HOUR_S
from dlsched.workloads.dl2 import SLOT_S

LEVELS: tuple[tuple[int, int], ...] = ((1, 1), (1, 2), (1, 3), (2, 1), (2, 3))
"""(workers, PS) that one *unit* of a parameter-server job adds, per action level (a job
without PS adds one worker a unit whatever its level)."""


def _unit_actions(run: JobRun, row: int, level: int) -> list[int]:
    """The incremental `Dl2Slot` actions of one unit of ``row`` at ``level``: a worker and a
    PS together while both are due, then the rest."""
    if not (run.spec.arch is Arch.PS and run.spec.max_ps > 0):
        return [3 * row + ADD_WORKER]
    workers, ps = LEVELS[level]
    both = min(workers, ps)
    rest = ADD_WORKER if workers > ps else ADD_PS
    return [3 * row + ADD_BOTH] * both + [3 * row + rest] * abs(workers - ps)


def _add_unit(slot: Dl2Slot, row: int, level: int) -> bool:
    """Give ``row`` of ``slot``'s current batch one more unit (as much of it as fits); False
    if nothing of it could be added (at the job's limits or out of room)."""
    added = False
    for action in _unit_actions(slot.rows[row], row, level):
        try:
            slot.apply(action)
        except ValueError:
            break
        added = True
    return added


def _round_robin(slot: Dl2Slot, levels: list[int]) -> None:
    """One unit per row per round, in row (arrival) order, until no row can take more."""
    rows = list(range(len(levels)))
    while rows:
        rows = [r for r in rows if _add_unit(slot, r, levels[r])]


LevelsPer = Literal["job", "type"]


def level_mask(
    slot: Dl2Slot, per: LevelsPer = "job", num_levels: int = len(LEVELS)
) -> npt.NDArray[np.bool_]:
    """Flat mask, ``K`` entries a dimension: ``per="job"``: every level of a present row, level
    0 only for an empty row; ``per="type"``: every level of every job type."""
    if per == "type":
        return np.ones(slot.shape.L * num_levels, dtype=bool)
    mask = np.zeros((slot.shape.J, num_levels), dtype=bool)
    mask[:, 0] = True
    mask[: len(slot.rows), :] = True
    return mask.ravel()


def row_levels(slot: Dl2Slot, levels: npt.ArrayLike, per: LevelsPer = "job") -> list[int]:
    """One level per present row of ``slot``'s current batch: the row's own (``per="job"``),
    or its job type's (``per="type"``; a type not in the state gets level 0)."""
    lv = np.asarray(levels, dtype=np.int64).ravel()
    size = slot.shape.J if per == "job" else slot.shape.L
    if lv.shape[0] != size or lv.min(initial=0) < 0 or lv.max(initial=0) >= len(LEVELS):
        raise ValueError(f"levels must be {size} integers in 0..{len(LEVELS) - 1}")
    if per == "job":
        return [int(k) for k in lv[: len(slot.rows)]]
    index = {name: i for i, name in enumerate(slot.shape.job_types)}
    return [int(lv[index[r.spec.model]]) if r.spec.model in index else 0 for r in slot.rows]


def apply_levels(slot: Dl2Slot, levels: npt.ArrayLike, per: LevelsPer = "job") -> None:
    """Fill ``slot`` (fresh, batch 0) from the levels (module docstring) and end it."""
    _round_robin(slot, row_levels(slot, levels, per))
    void = slot.shape.void
    while slot.batch + 1 < slot.num_batches:  # jobs beyond the J rows
        slot.apply(void)
        _round_robin(slot, row_levels(slot, levels, per) if per == "type" else [0] * len(slot.rows))
    if not slot.done:
        slot.apply(void)


class Dl2LevelBuilder:
    """One scheduling point decided by one level vector (a `SlotBuilder` for the adapter)."""

    def __init__(self, view: ClusterView, shape: Dl2Shape, per: LevelsPer = "job") -> None:
        self.slot = Dl2Slot(view, shape)
        self.per: LevelsPer = per

    def observation(self) -> npt.NDArray[np.float32]:
        return self.slot.observation()

    def action_mask(self) -> npt.NDArray[np.bool_]:
        return level_mask(self.slot, self.per)

    def apply(self, action: Any) -> bool:
        apply_levels(self.slot, action, self.per)
        return True

    def decision(self) -> Decision:
        return self.slot.decision()


class Dl2LevelEncoder:
    """`SlotEncoder` of `Dl2SlotEnv`: a `Dl2LevelBuilder` per scheduling point."""

    def __init__(self, shape: Dl2Shape, per: LevelsPer = "job") -> None:
        self.shape = shape
        self.per: LevelsPer = per

    def start(self, view: ClusterView) -> Dl2LevelBuilder:
        return Dl2LevelBuilder(view, self.shape, self.per)


class Dl2SlotEnv(Dl2Env):
    """DL2 with one step per slot (module docstring). Arguments as `Dl2Env`, less ``reward``
    (always minus the mean jobs in the system ÷ ``J``), plus ``per``: ``"type"`` (default: a
    level per job type, the setting in which MaskablePPO beat DRF, ``benchmarks/RESULTS.md``)
    or ``"job"`` (a level per job row: 12 minutes of MaskablePPO learned nothing there)."""

    def __init__(
        self,
        workload: str = "dl2",
        *,
        shape: Dl2Shape | None = None,
        seeds: Sequence[int] | None = None,
        max_slots: int = 2000,
        per: LevelsPer = "type",
        **workload_options: Any,
    ) -> None:
        if per not in ("job", "type"):
            raise ValueError(f"per must be 'job' or 'type', got {per!r}")
        super().__init__(
            workload,
            shape=shape,
            seeds=seeds,
            max_slots=max_slots,
            reward="jct",
            **workload_options,
        )
        self.per: LevelsPer = per
        dims = self.shape.J if per == "job" else self.shape.L
        self.action_space = gym.spaces.MultiDiscrete([len(LEVELS)] * dims)  # type: ignore[assignment]
        self._scale = HOUR_S / (SLOT_S * self.shape.J)

    def step(
        self, action: npt.ArrayLike
    ) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        dims = self.shape.J if self.per == "job" else self.shape.L
        levels = multi_discrete_action(action, (dims,), len(LEVELS), type(self).__name__)
        if self.ended:
            raise ValueError(f"{type(self).__name__}.step: {EPISODE_OVER}")
        if self.slot is None or self.driver is None:
            raise ValueError("call reset() before step()")
        apply_levels(self.slot, levels, self.per)
        reward = self._run_slot() * self._scale
        terminated = self.slot is None
        truncated = not terminated and self.slots >= self.max_slots
        self.ended = terminated or truncated
        return self._observation(), reward, terminated, truncated, self._info(reward, True)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Legal levels now, flat ``J · K`` (sb3-contrib's MultiDiscrete convention)."""
        if self.slot is None:
            dims = self.shape.J if self.per == "job" else self.shape.L
            mask = np.zeros((dims, len(LEVELS)), dtype=bool)
            mask[:, 0] = True
            return mask.ravel()
        return level_mask(self.slot, self.per)

    def slot_encoder(self) -> Dl2LevelEncoder:  # type: ignore[override]
        """The level encoding for a deployed scheduler (`dlsched.rl.adapter.PolicyAdapter`)."""
        return Dl2LevelEncoder(self.shape, self.per)
