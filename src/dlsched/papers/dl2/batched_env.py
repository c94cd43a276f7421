"""`Dl2BatchedEnv`: many `Dl2Env` episodes stepped at once as arrays (issue 29).

``step(actions)`` takes one action per environment (shape ``(B,)``) and returns observations
``(B, obs_dim)`` float32, masks ``(B, 3J + 1)``, DL2's paper reward ``(B,)`` (epochs trained in
the slot over total epochs, summed; paid on the void action that ends a slot, 0 otherwise)
and ``terminated`` / ``truncated`` / ``slot_end`` flags ``(B,)``: the semantics of `Dl2Env`
with ``reward="paper"`` (same observations, masks, rewards and episode ends for the same trace
seed and actions; ``tests/papers/dl2/test_batched_env.py``). An environment whose episode
ended returns zeros (or, truncated at ``max_slots``, its last observation) and is restarted on
a fresh trace by `reset_done` (the trainer calls it after reading the final step).

The whole step is one compiled call (`dlsched.papers.dl2.batched_step`): row actions through
`slot_kernels.apply_row`, slot ends through `batched_kernels.end_slot` (executor, load-balance
placement, noise, completions). Trace generation stays in `dlsched.workloads.dl2`. The arrays
live on the CPU (the placement rule places one task at a time); ``device`` only says where
`tensors` puts observations and masks for a learner (a CUDA device when there is one).

Traces: ``reset(trace_seeds)`` or drawn per restart from a generator seeded by ``seed``, at
least `TRAIN_SEED_MIN` (validation seeds are never trained on). Supported: DL2 workloads of
parameter-server jobs whose tasks use one of at most two distinct demands, the measured speed
model, ``load_balance`` placement, hot rescaling (as `Dl2Env`; no ``vary``/``transform``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from dlsched.core import Arch
from dlsched.models.measured_ps import MeasuredPS
from dlsched.papers.dl2 import batched_kernels as bk
from dlsched.papers.dl2 import batched_step as bs
from dlsched.papers.dl2 import slot_kernels as sk
from dlsched.papers.dl2.env import TRAIN_SEED_MIN
from dlsched.papers.dl2.state import Dl2Shape
from dlsched.workloads.base import Workload
from dlsched.workloads.registry import make_workload

NOISE_BUFFER = 8192
"""Normals drawn ahead per environment (topped up from the same generator when low)."""
NOISE_MODES = {"stream": bk.NOISE_STREAM, "per_job": bk.NOISE_PER_JOB}
"""`Dl2BatchedEnv`'s ``noise`` options."""


def resolve_device(device: str) -> torch.device:
    """``"auto"`` → CUDA when available, else CPU; ``"cpu"``; ``"cuda"`` (ValueError without)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
    return torch.device(device)


class Dl2BatchedEnv:
    """``num_envs`` DL2 episodes stepped together (module docstring).

    Args:
        num_envs: environments ``B``.
        workload: registered DL2-like workload name.
        shape: J and job types of the state.
        max_slots: slots before an episode is truncated.
        seed: seeds the trace seeds drawn on restarts.
        device: where `tensors` puts observations and masks (``auto``, ``cpu``, ``cuda``).
        noise: ``"stream"`` (the simulator's: one stream of normals per trace, read in order,
            so one changed action reshuffles every later draw) or ``"per_job"`` (not the
            simulator's: each job's factor at a tick is a hash of the trace seed, the tick and
            the job, so copies of a trace that differ only in actions share their noise;
            paired rollouts, `dlsched.papers.dl2.paired`).
        **workload_options: generator options (``servers``, ``load``, ``num_jobs``).
    """

    def __init__(
        self,
        num_envs: int,
        workload: str = "dl2",
        *,
        shape: Dl2Shape | None = None,
        max_slots: int = 2000,
        seed: int = 0,
        device: str = "cpu",
        noise: str = "stream",
        **workload_options: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if noise not in NOISE_MODES:
            raise ValueError(f"noise must be one of {', '.join(NOISE_MODES)}, got {noise!r}")
        self.noise_mode = NOISE_MODES[noise]
        self.num_envs = B = num_envs
        self.workload_name = workload
        self.workload_options = dict(workload_options)
        self.shape = shape or Dl2Shape()
        self.max_slots = max_slots
        self.device = resolve_device(device)
        self.rng = np.random.default_rng(seed)
        probe = make_workload(workload, seed=0, **self.workload_options)
        self.cap = probe.make_cluster().capacity_array.astype(np.float64)
        self._static(probe)
        S, J = len(self.cap), self.shape.J
        N = max(len(probe.jobs), 1)
        self._alloc(B, N, S, J)
        self.trace_seeds = np.zeros(B, dtype=np.int64)
        self._gens: list[np.random.Generator] = [np.random.default_rng(0)] * B

    # -- set-up ------------------------------------------------------------------------------

    def _static(self, probe: Workload) -> None:
        """Speed table, the task demands and the type index (from one probe trace)."""
        model = probe.model
        if not isinstance(model, MeasuredPS):
            raise ValueError(f"batched DL2 needs the measured PS speed model, got {model.name}")
        if probe.placement != "load_balance" or probe.interval_s != bk.SLOT_S:
            raise ValueError("batched DL2 needs load_balance placement and 1,200 s slots")
        types = self.shape.job_types
        self.speed = np.zeros((len(types), 17, 17))
        for t, name in enumerate(types):
            for p in range(17):
                for w in range(17):
                    self.speed[t, p, w] = model.epochs_per_s(name, p, w) if p and w else 0.0
        self.type_index = {name: i for i, name in enumerate(types)}
        self.noise_level = float(probe.noise)
        self._needs: list[tuple[float, float, float]] = []
        self._pair_ids: dict[tuple[int, int], int] = {}

    def _need_id(self, need: tuple[float, float, float]) -> int:
        if need not in self._needs:
            self._needs.append(need)
        return self._needs.index(need)

    def _alloc(self, B: int, N: int, S: int, J: int) -> None:
        shape = self.shape
        self.N = N
        z = np.zeros
        self.obs = z((B, shape.obs_dim), dtype=np.float32)
        self.mask = z((B, shape.num_actions), dtype=bool)
        self.rows = z((B, J, sk.ROW_FIELDS), dtype=np.int64)
        self.st = z((B, sk.ST_FIELDS), dtype=np.int64)
        self.free = z((B, S, 3))
        self.totals_cap = z((B, 2, 3))
        self.fits = z((B, 2, S), dtype=np.int64)
        self.slot_i = z((B, bs.SLOT_FIELDS), dtype=np.int64)
        self.row_job = z((B, J), dtype=np.int64)
        self.ints = z((B, bk.INT_FIELDS), dtype=np.int64)
        self.floats = z((B, bk.FLOAT_FIELDS))
        self.buf_len = max(NOISE_BUFFER, 8 * N)
        self.buf = z((B, self.buf_len))
        self.rewards = z(B)
        self.job_s = z(B)
        """Job-seconds the slot's jobs spent in the system during each environment's slot that
        ended at the last step (0 where none ended; after a stall too)."""
        self.flags = z((B, 3), dtype=np.int8)
        self._job_arrays(B, N, S)

    def _job_arrays(self, B: int, N: int, S: int) -> None:
        z = np.zeros
        self.jtype = z((B, N), dtype=np.int64)
        self.caps = z((B, N, 4), dtype=np.int64)
        self.pair_of = z((B, N), dtype=np.int64)
        self.wneed_of = z((B, N, 3))
        self.total = z((B, N))
        self.submit = np.full((B, N), np.inf)
        self.status = z((B, N), dtype=np.int8)
        self.started = z((B, N), dtype=bool)
        self.run_seq = np.full((B, N), -1, dtype=np.int64)
        self.aw = z((B, N), dtype=np.int64)
        self.ap = z((B, N), dtype=np.int64)
        self.wp = z((B, N, S), dtype=np.int64)
        self.pp = z((B, N, S), dtype=np.int64)
        self.used = z((B, S, 3))
        self.progress = z((B, N))
        self.ptime = z((B, N))
        self.paused = z((B, N))
        self.rate = z((B, N))
        self.comp = np.full((B, N), np.inf)
        self.slots_run = z((B, N), dtype=np.int64)
        self.before = z((B, N))
        self.slot_w = z((B, N), dtype=np.int64)
        self.slot_p = z((B, N), dtype=np.int64)
        self.order = z((B, N), dtype=np.int64)
        self.active = z((B, N), dtype=np.int64)

    # -- episodes ----------------------------------------------------------------------------

    def _load_trace(self, b: int, trace_seed: int) -> None:
        workload = make_workload(self.workload_name, seed=trace_seed, **self.workload_options)
        specs = sorted(workload.jobs, key=lambda j: (j.submit_time_s, j.job_id))
        if len(specs) > self.N:
            raise ValueError(f"trace {trace_seed}: {len(specs)} jobs, more than {self.N}")
        for arr, value in (
            (self.status, 0), (self.started, False), (self.run_seq, -1), (self.aw, 0),
            (self.ap, 0), (self.wp, 0), (self.pp, 0), (self.used, 0.0), (self.progress, 0.0),
            (self.ptime, 0.0), (self.paused, 0.0), (self.rate, 0.0), (self.comp, np.inf),
            (self.slots_run, 0), (self.submit, np.inf), (self.total, 0.0),
        ):  # fmt: skip
            arr[b] = value
        pneed: tuple[float, float, float] | None = None
        for j, spec in enumerate(specs):
            if spec.arch is not Arch.PS or spec.max_ps <= 0:
                raise ValueError(f"trace {trace_seed}: job {spec.job_id} is not a PS job")
            self.jtype[b, j] = self.type_index.get(spec.model, -1)
            self.caps[b, j] = (spec.max_workers, spec.max_ps, max(1, spec.min_workers), 1)
            w, p = spec.worker_demand.as_tuple(), spec.ps_demand.as_tuple()
            pneed = p if pneed is None else pneed
            if p != pneed:
                raise ValueError(f"trace {trace_seed}: PS demands differ between jobs")
            key = (self._need_id(w), self._need_id(p))
            self.pair_of[b, j] = self._pair_ids.setdefault(key, len(self._pair_ids))
            self.wneed_of[b, j] = w
            self.total[b, j] = spec.total_work
            self.submit[b, j] = spec.submit_time_s
        if len(self._needs) > 2:
            raise ValueError("batched DL2 supports at most two distinct task demands")
        self.pneed = np.asarray(pneed, dtype=np.float64)
        self.trace_seeds[b] = trace_seed
        gen = np.random.default_rng(trace_seed)
        self._gens[b] = gen
        self.buf[b] = gen.standard_normal(self.buf_len)
        self.ints[b] = 0
        self.ints[b, bk.I_N_JOBS] = len(specs)
        self.ints[b, bk.I_NOISE_MODE] = self.noise_mode
        self.ints[b, bk.I_NOISE_KEY] = trace_seed
        self.floats[b, bk.F_NOW] = 0.0
        self.floats[b, bk.F_LEVEL] = self.noise_level
        self.slot_i[b, bs.S_DONE] = 0
        first = specs[0].submit_time_s if specs else 0.0
        bk.start_episode(b, first, self.status, self.ptime, self.submit, self.ints, self.floats)
        self._start_slot(b)

    def _start_slot(self, b: int) -> None:
        rest = (
            self.cap,
            self.status,
            self.before,
            self.slot_w,
            self.slot_p,
            self.ints,
            self.floats,
        )
        bs.start_slot(b, *self._slot_args(), *rest)  # type: ignore[call-arg]  # numba's stub

    def _slot_args(self) -> tuple[Any, ...]:
        shape = self.shape
        return (
            shape.J, shape.L, self.obs, self.rows, self.st, self.free, self.totals_cap,
            self._needs_array(), self.fits, self.mask, self.active, self.slot_i, self.row_job,
            self.jtype, self.caps, self.pair_of, self.slots_run, self.progress, self.ptime,
            self.paused, self.rate, self.total, self.aw, self.ap, self._pairs_array(),
        )  # fmt: skip

    def _needs_array(self) -> npt.NDArray[np.float64]:
        needs = self._needs + [(0.0, 0.0, 0.0)] * (2 - len(self._needs))
        return np.asarray(needs, dtype=np.float64)

    def _pairs_array(self) -> npt.NDArray[np.int64]:
        pairs = np.zeros((max(len(self._pair_ids), 1), 2), dtype=np.int64)
        for (w, p), k in self._pair_ids.items():
            pairs[k] = (w, p)
        return pairs

    def reset(
        self, trace_seeds: Sequence[int] | None = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """Start every environment on a trace (given, or drawn); observations and masks."""
        if trace_seeds is not None and len(trace_seeds) != self.num_envs:
            raise ValueError(f"give {self.num_envs} trace seeds, got {len(trace_seeds)}")
        for b in range(self.num_envs):
            self._load_trace(b, int(trace_seeds[b]) if trace_seeds is not None else self._draw())
        return self.obs, self.mask

    def _draw(self) -> int:
        return int(self.rng.integers(TRAIN_SEED_MIN, 2**31 - 1))

    def reset_done(self, trace_seeds: Sequence[int] | None = None) -> npt.NDArray[np.bool_]:
        """Restart every ended environment on a new trace; which ones were restarted."""
        done = self.slot_i[:, bs.S_DONE].astype(bool)
        for k, b in enumerate(np.flatnonzero(done)):
            self._load_trace(int(b), int(trace_seeds[k]) if trace_seeds else self._draw())
        return done

    def step(
        self, actions: npt.ArrayLike
    ) -> tuple[
        npt.NDArray[np.float32],
        npt.NDArray[np.bool_],
        npt.NDArray[np.float64],
        npt.NDArray[np.bool_],
        npt.NDArray[np.bool_],
        npt.NDArray[np.bool_],
    ]:
        """One action per environment: (obs, masks, rewards, terminated, truncated, slot_end).

        The returned arrays are the environment's own (overwritten by the next step)."""
        a = np.asarray(actions, dtype=np.int64).reshape(-1)
        if a.shape[0] != self.num_envs:
            raise ValueError(f"give {self.num_envs} actions, got {a.shape[0]}")
        if a.min(initial=0) < 0 or a.max(initial=0) >= self.shape.num_actions:
            raise ValueError(f"actions must be in 0..{self.shape.num_actions - 1}")
        low = self.ints[:, bk.I_CURSOR] > self.buf_len - 4 * self.N - 8
        for b in np.flatnonzero(low):
            self._top_up(int(b))
        rest = (
            self.cap, self.status, self.before, self.slot_w, self.slot_p, self.order,
            self.started, self.run_seq, self.wp, self.pp, self.used, self.wneed_of, self.pneed,
            self.speed, self.comp, self.submit, self.buf, self.ints, self.floats,
            self.max_slots, self.rewards, self.flags, self.job_s,
        )  # fmt: skip
        bs.step_all(a, *self._slot_args(), *rest)  # type: ignore[call-arg]  # numba's stub
        flags = self.flags.astype(bool)
        return self.obs, self.mask, self.rewards, flags[:, 1], flags[:, 2], flags[:, 0]

    def _top_up(self, b: int) -> None:
        """Keep the unread normals and continue the sequence from the environment's generator."""
        cur = int(self.ints[b, bk.I_CURSOR])
        rest = self.buf[b, cur:].copy()
        self.buf[b, : len(rest)] = rest
        self.buf[b, len(rest) :] = self._gens[b].standard_normal(self.buf_len - len(rest))
        self.ints[b, bk.I_CURSOR] = 0

    # -- for learners --------------------------------------------------------------------------

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Observations and masks as tensors on ``device`` (copies)."""
        return (
            torch.from_numpy(self.obs).to(self.device, copy=True),
            torch.from_numpy(self.mask).to(self.device, copy=True),
        )

    def row_counts(self) -> npt.NDArray[np.int64]:
        """``(B, J, 2)`` workers and PS given so far this slot to each row of the batch."""
        return self.rows[:, :, sk.W : sk.P + 1]
