"""`BatchedDeepRMEnv`: ``num_envs`` episodes of ``dlsched/DeepRM-v0`` stepped at once as arrays.

The paper's environment (`dlsched.papers.deeprm.env.DeepRMEnv` with its defaults: image
observation, slots in arrival order, ``reward="slowdown"`` or ``"jct"``), many episodes per
call: ``reset`` takes one seed per episode, ``step`` one action per episode, and every return
value is an array with the episodes along axis 0. Per seed, episode ``i`` is exactly the
scalar environment's episode after ``reset(seed=seeds[i])`` under the same actions: same
jobset, observations, rewards, masks and ends (``tests/rl/test_deeprm_batched.py``).

Two back-ends, one interface (`make_batch`):

* ``device="cpu"``: NumPy arrays (`dlsched.papers.deeprm.state.DeepRMBatch`);
* ``device="cuda"``: PyTorch tensors on the GPU
  (`dlsched.papers.deeprm.torch_state.TorchDeepRMBatch`); ``backend="torch"`` runs that code
  on the CPU too (tests);
* ``device="auto"``: CUDA when ``torch.cuda.is_available()``, else the CPU.

Episodes do not restart by themselves: one that ends stays ended (reward 0, flags kept) until
the next ``reset``, which restarts all of them — the lock-step that REINFORCE's per-timestep
baseline over episodes of the same jobset wants (`dlsched.papers.deeprm.paper`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import torch
from gymnasium.utils import seeding

from dlsched.papers.deeprm.shape import DeepRMShape, Jobset
from dlsched.papers.deeprm.state import DeepRMBatch, Objective
from dlsched.workloads.deeprm import make_deeprm

Device = Literal["auto", "cpu", "cuda"]
Backend = Literal["numpy", "torch"]
AnyBatch = DeepRMBatch | Any  # TorchDeepRMBatch is imported lazily (same interface)
_OBJECTIVE: dict[str, Objective] = {"slowdown": "slowdown", "jct": "completion"}


def resolve_device(device: str) -> str:
    """``"auto"`` → ``"cuda"`` if a GPU is visible, else ``"cpu"``; ``"cuda"`` without one
    raises ValueError naming ``--device``."""
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"--device {device!r}: choose auto, cpu or cuda")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is visible (torch.cuda.is_available())")
    return device


def make_batch(
    jobsets: Sequence[Jobset],
    shape: DeepRMShape | None = None,
    *,
    objective: Objective = "slowdown",
    max_steps: int = 400,
    device: str = "cpu",
    backend: Backend | None = None,
) -> AnyBatch:
    """A batch of episodes on ``device``: NumPy on the CPU, torch tensors elsewhere (or
    wherever ``backend="torch"``)."""
    device = resolve_device(device)
    if (backend or ("numpy" if device == "cpu" else "torch")) == "numpy":
        return DeepRMBatch(jobsets, shape, objective=objective, max_steps=max_steps)
    from dlsched.papers.deeprm.torch_state import TorchDeepRMBatch

    return TorchDeepRMBatch(jobsets, shape, objective=objective, max_steps=max_steps, device=device)


def trace_seed(seed: int) -> int:
    """The ``deeprm`` workload seed `DeepRMEnv.reset(seed=seed)` draws its jobset from."""
    rng, _ = seeding.np_random(seed)
    return int(rng.integers(2**31 - 1))


class BatchedDeepRMEnv:
    """``num_envs`` DeepRM episodes in lock-step (module docstring).

    Args:
        num_envs: episodes per batch.
        load: offered load of generated jobsets.
        reward: ``"slowdown"`` (``−Σ 1/T_j`` per time step) or ``"jct"`` (``−|J|``).
        horizon_steps: steps of arrivals per generated jobset.
        shape: state sizes (the paper's view: ``ranked`` False).
        mask_invalid: True: `action_masks` marks only valid actions; False: all actions.
        max_steps: truncate after this many time steps.
        device: ``"auto"``, ``"cpu"`` (NumPy) or ``"cuda"`` (torch).
        backend: force ``"numpy"`` or ``"torch"`` (default: by device).
    """

    def __init__(
        self,
        num_envs: int,
        load: float = 0.7,
        reward: Literal["slowdown", "jct"] = "slowdown",
        *,
        horizon_steps: int = 50,
        shape: DeepRMShape | None = None,
        mask_invalid: bool = True,
        max_steps: int = 400,
        device: Device = "cpu",
        backend: Backend | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"BatchedDeepRMEnv: num_envs must be >= 1, got {num_envs}")
        if reward not in _OBJECTIVE:
            raise ValueError(
                f"BatchedDeepRMEnv: reward must be 'slowdown' or 'jct', got {reward!r}"
            )
        self.num_envs = num_envs
        self.load = load
        self.objective = _OBJECTIVE[reward]
        self.horizon_steps = horizon_steps
        self.shape = shape or DeepRMShape()
        if self.shape.ranked:
            raise ValueError("BatchedDeepRMEnv: the paper's view only (ranked=False)")
        self.mask_invalid = mask_invalid
        self.max_steps = max_steps
        self.device = resolve_device(device)
        self.backend: Backend = backend or ("numpy" if self.device == "cpu" else "torch")
        self.batch: AnyBatch | None = None
        self.trace_seeds: list[int] = []

    def reset(
        self, *, seed: int | Sequence[int] | None = None, jobsets: Sequence[Jobset] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start ``num_envs`` episodes: jobsets drawn as ``DeepRMEnv.reset(seed=s)`` draws them
        for ``s`` in ``seed`` (an int ``s``: seeds ``s, s + 1, …``; None: fresh entropy), or
        the given ``jobsets``. Returns ``(obs (B, T·W), info)``."""
        if jobsets is None:
            seeds = _seeds(seed, self.num_envs)
            self.trace_seeds = [trace_seed(s) for s in seeds]
            jobsets = [
                Jobset.from_workload(
                    make_deeprm(t, load=self.load, horizon_steps=self.horizon_steps), self.shape
                )
                for t in self.trace_seeds
            ]
        elif len(jobsets) != self.num_envs:
            raise ValueError(f"reset: {len(jobsets)} jobsets for {self.num_envs} episodes")
        self.batch = make_batch(
            jobsets,
            self.shape,
            objective=self.objective,
            max_steps=self.max_steps,
            device=self.device,
            backend=self.backend,
        )
        return self._obs(), self._info()

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """One action per episode (ignored for ended ones) → ``(obs, reward, terminated,
        truncated, info)``, arrays of ``num_envs`` rows; ``info["advanced"]`` marks the
        episodes whose time moved on."""
        batch = self._batch()
        reward, advanced = batch.step(actions)
        info = self._info()
        info["advanced"] = advanced
        ended = (batch.terminated, batch.truncated)
        terminated, truncated = (
            e.copy() if isinstance(e, np.ndarray) else e.clone() for e in ended
        )
        return self._obs(), reward, terminated, truncated, info

    def action_masks(self) -> Any:
        """``(B, M + 1)`` valid actions (all True with ``mask_invalid=False``)."""
        batch = self._batch()
        masks = batch.action_masks()
        if self.mask_invalid:
            return masks
        if isinstance(masks, np.ndarray):
            return np.ones_like(masks)
        return torch.ones_like(masks)

    def _batch(self) -> AnyBatch:
        if self.batch is None:
            raise RuntimeError("BatchedDeepRMEnv: call reset() before step()")
        return self.batch

    def _obs(self) -> Any:
        images = self._batch().images()
        return images.reshape(images.shape[0], -1)

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks()}


def _seeds(seed: int | Sequence[int] | None, n: int) -> list[int]:
    if seed is None:
        return [int(s) for s in np.random.SeedSequence().generate_state(n)]
    if isinstance(seed, int):
        return [seed + i for i in range(n)]
    seeds = [int(s) for s in seed]
    if len(seeds) != n:
        raise ValueError(f"reset: {len(seeds)} seeds for {n} episodes")
    return seeds
