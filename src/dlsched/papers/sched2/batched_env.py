"""`BatchedSched2Env`: many SCED² episodes stepped at once as arrays (NumPy, or PyTorch on CUDA).

The same problem as `dlsched.papers.sched2.env.Sched2Env` with ``reward="paper"`` and the
paper's arrival-order window, for ``B`` traces side by side: one call to `step` takes ``B``
actions and returns ``B`` observations, rewards, masks and end flags. It does not go through the
event simulator; it re-implements the only dynamics SCED²'s setting has — non-preemptive jobs
that hold whole GPUs from start to end at the `Locality` speed of their packing placement,
arrivals and completions as the only events — with the simulator's own arithmetic, so that per
seed an episode gives the same trajectory as `Sched2Env` (observations, masks and rewards equal
up to float rounding of sums, the same actions under any policy; `tests/rl/test_sched2_batched`).
It accepts only workloads of that setting (`check_workload` says what else it refuses).

State per episode, jobs in arrival order (submission time, then job id):

* ``status``: 0 not yet submitted, 1 waiting, 2 running (or picked this round), 3 finished;
  ``start``, ``finish`` (inf until started), ``speed`` (true `Locality` speed on its placement);
* ``free``: free GPUs per server; ``slots`` ``(N, M)``: the job on each GPU, -1 when free, each
  server's jobs from the left in start order — the layout of
  `dlsched.papers.sched2.state.remaining_matrix`, which fills rows in the running list's order;
* jobs picked in the current round show their profiled estimate, not their true time (as
  `Sched2Builder.apply`).

Backends: ``device="cpu"`` steps NumPy arrays; ``device="cuda"`` (or ``backend="torch"`` on any
device) steps PyTorch tensors, observations stay on the device. ``resolve_device("auto")``
picks CUDA when present.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dlsched.models.locality import Locality
from dlsched.papers.sched2.arrays import (
    ArrayOps,
    check_workload,
    estimated_speed,
    hold_blocked,
    resolve_device,
    slowdown,
)
from dlsched.papers.sched2.env import OBS_HIGH, TraceFactory, workload_traces
from dlsched.papers.sched2.profiling import K_PROFILES, MINIBATCHES, NOISE, profile_spans
from dlsched.papers.sched2.state import J_SLOTS, TIME_SCALE_S, Sched2Shape, check_hold_mask
from dlsched.workloads.base import Workload

WAITING, RUNNING, FINISHED = 1, 2, 3
REWARDS = ("paper", "incremental")


class BatchedSched2Env:
    """``num_envs`` SCED² episodes at once (module docstring).

    Args:
        num_envs: B, episodes stepped together.
        traces: seed → workload (default: the ``sched2`` workload with ``workload_options``).
        slots: J, waiting jobs the agent sees (arrival order).
        profile_seed: seed of the profiler's measurement noise (as `Sched2Env`).
        device: ``cpu`` (NumPy) or ``cuda`` (PyTorch); `resolve_device` maps ``auto``.
        backend: ``numpy`` or ``torch``; default NumPy on CPU, PyTorch on CUDA.
        reward: ``"paper"`` (SCED² §III-D: each picked job's execution effectiveness, 0 for φ)
            or ``"incremental"`` (the same episode total less the job count, paid as it accrues:
            `effectiveness_potential`'s change over each step).
        hold_mask: ``"none"`` (SCED²) or ``"local"`` (a deviation; `Sched2Builder.action_mask`).
        **workload_options: options of the default ``sched2`` traces.
    """

    def __init__(
        self,
        num_envs: int,
        traces: TraceFactory | None = None,
        *,
        slots: int = J_SLOTS,
        profile_seed: int = 0,
        device: str = "cpu",
        backend: str | None = None,
        reward: str = "paper",
        hold_mask: str = "none",
        **workload_options: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if reward not in REWARDS:
            raise ValueError(f"batched sched2 env: reward must be one of {REWARDS}, got {reward!r}")
        check_hold_mask(hold_mask, "batched sched2 env")
        self.reward = reward
        self.hold_mask = hold_mask
        device = resolve_device(device)
        backend = backend or ("torch" if device == "cuda" else "numpy")
        if backend not in ("numpy", "torch") or (backend == "numpy" and device != "cpu"):
            raise ValueError(f"batched sched2 env: backend {backend!r} on {device} is not offered")
        self.ops = ArrayOps(backend, device)
        self.num_envs = num_envs
        self.traces = traces or workload_traces("sched2", **workload_options)
        probe = self.traces(0)
        n, m = check_workload(probe)
        self.num_jobs = len(probe.jobs)
        self.shape = Sched2Shape(n, m, slots, K_PROFILES, "arrival")
        assert isinstance(probe.model, Locality)  # check_workload
        self.model: Locality = probe.model
        self.profile_seed = profile_seed
        self._noise: npt.NDArray[np.float64] = np.zeros((0, K_PROFILES, MINIBATCHES))
        self.trace_seeds = [0] * num_envs
        self._allocate()

    # -- episodes ----------------------------------------------------------------------------

    def _allocate(self) -> None:
        o, b, jn = self.ops, self.num_envs, self.num_jobs
        n, m, k = self.shape.servers, self.shape.gpus_per_server, self.shape.k
        self.submit = o.full((b, jn), math.inf, o.f64)
        self.work = o.full((b, jn), 0.0, o.f64)
        self.gpus = o.full((b, jn), 0, o.i64)
        self.best = o.full((b, jn), 1, o.i64)
        self.sens = o.full((b, jn), 1.0, o.f64)
        self.spans = o.full((b, jn, k), 1, o.i64)
        self.prof_speed = o.full((b, jn, k), 1.0, o.f64)
        self.prof_feat = o.full((b, jn, k), 0.0, o.f64)
        self.status = o.full((b, jn), FINISHED, o.i64)
        self.start = o.full((b, jn), 0.0, o.f64)
        self.finish = o.full((b, jn), math.inf, o.f64)
        self.next_end = o.full((b, jn), math.inf, o.f64)
        self.speed = o.full((b, jn), 1.0, o.f64)
        self.estimate = o.full((b, jn), 0.0, o.f64)
        self.in_round = o.full((b, jn), False, o.b)
        self.free = o.full((b, n), m, o.i64)
        self.slots = o.full((b, n, m), -1, o.i64)
        self.now = o.full((b,), 0.0, o.f64)
        self.arrived = o.full((b,), 0, o.i64)
        self.done = o.full((b,), True, o.b)
        self.picks = o.full((b,), 0, o.i64)
        self.eff_sum = o.full((b,), 0.0, o.f64)
        self.rows = o.arange(b)

    def _profile_noise(self, job_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """``(jobs, k, minibatches)`` standard normals the `Profiler` draws for these ids."""
        top = int(job_ids.max()) + 1 if job_ids.size else 0
        if top > len(self._noise):
            grown = np.empty((top, K_PROFILES, MINIBATCHES))
            grown[: len(self._noise)] = self._noise
            for jid in range(len(self._noise), top):
                rng = np.random.default_rng([self.profile_seed, jid])
                grown[jid] = rng.standard_normal((K_PROFILES, MINIBATCHES))
            self._noise = grown
        return self._noise[job_ids]

    def _trace_arrays(self, workload: Workload) -> dict[str, npt.NDArray[Any]]:
        """A trace's per-job arrays in arrival order, profiles measured as `Profiler` does."""
        if check_workload(workload) != (self.shape.servers, self.shape.gpus_per_server):
            raise ValueError("batched sched2 env: a trace's cluster differs from the first one")
        specs = sorted(workload.jobs, key=lambda j: (j.submit_time_s, j.job_id))
        if len(specs) != self.num_jobs:
            raise ValueError(
                f"batched sched2 env: traces must have {self.num_jobs} jobs, got {len(specs)}"
            )
        m = self.shape.gpus_per_server
        gpus = np.array([s.num_workers for s in specs], dtype=np.int64)
        sens = np.array([self.model.sensitivity[s.model] for s in specs], dtype=np.float64)
        best = -(-gpus // m)
        spans = np.array([profile_spans(int(g), m) for g in gpus], dtype=np.int64)
        true = np.minimum(1.0, slowdown(sens, best)[:, None] / slowdown(sens[:, None], spans))
        true = np.where(spans == best[:, None], 1.0, true)
        z = self._profile_noise(np.array([s.job_id for s in specs], dtype=np.int64))
        times = np.exp(NOISE * z) / true[:, :, None]
        speeds = 1.0 / times.mean(axis=-1)
        work = np.array([s.total_work for s in specs], dtype=np.float64)
        return {
            "submit": np.array([s.submit_time_s for s in specs], dtype=np.float64),
            "work": work,
            "gpus": gpus,
            "best": best,
            "sens": sens,
            "spans": spans,
            "prof_speed": speeds,
            "prof_feat": np.log1p(work[:, None] / np.maximum(speeds, 1e-9) / TIME_SCALE_S),
        }

    def reset(self, trace_seeds: Sequence[int]) -> tuple[Any, Any]:
        """Start every episode on the trace of its seed; (observations, masks)."""
        if len(trace_seeds) != self.num_envs:
            raise ValueError(f"reset needs {self.num_envs} trace seeds, got {len(trace_seeds)}")
        return self.reset_some(list(range(self.num_envs)), trace_seeds)

    def reset_some(self, envs: Sequence[int], trace_seeds: Sequence[int]) -> tuple[Any, Any]:
        """Restart episodes ``envs`` on new traces; (observations, masks) of all episodes."""
        o = self.ops
        for i, seed in zip(envs, trace_seeds, strict=True):
            arrays = self._trace_arrays(self.traces(int(seed)))
            for name, value in arrays.items():
                getattr(self, name)[i] = o.array(value, getattr(self, name).dtype)
            self.trace_seeds[i] = int(seed)
        idx = o.array(list(envs), o.i64)
        self.status[idx] = 0
        self.finish[idx] = math.inf
        self.next_end[idx] = math.inf
        self.in_round[idx] = False
        self.free[idx] = self.shape.gpus_per_server
        self.slots[idx] = -1
        self.now[idx] = 0.0
        self.arrived[idx] = 0
        self.done[idx] = False
        self.picks[idx] = 0
        self.eff_sum[idx] = 0.0
        self._advance(idx)
        return self.observe(), self.action_masks()

    # -- what the agent sees --------------------------------------------------------------------

    def _queue(self, idx: Any = None) -> tuple[Any, Any]:
        """``(waiting, rank)`` of episodes ``idx`` (default all): which jobs wait, and each
        waiting job's place in arrival order among them (1-based)."""
        status = self.status if idx is None else self.status[idx]
        waiting = status == WAITING
        if self.ops.torch:
            return waiting, waiting.to(self.ops.xp.int32).cumsum(dim=1)
        return waiting, waiting.cumsum(axis=1, dtype=np.int32)  # int32: 10x faster than int64

    def window(self) -> Any:
        """``(B, J)`` job indices of the first J waiting jobs (arrival order), -1 when empty."""
        o, j = self.ops, self.shape.slots
        waiting, rank = self._queue()
        rows, cols = o.nonzero(waiting & (rank <= j))
        win = o.full((self.num_envs, j), -1, o.i64)
        win[rows, rank[rows, cols] - 1] = cols
        return win

    def _can_pick(self, idx: Any) -> Any:
        """Whether one of the first J waiting jobs fits now, for episodes ``idx``."""
        waiting, rank = self._queue(idx)
        free = self.free[idx].sum(axis=1)[:, None]
        return (waiting & (rank <= self.shape.slots) & (self.gpus[idx] <= free)).any(axis=1)

    def action_masks(self, win: Any = None) -> Any:
        """``(B, J + 1)`` legal actions (as `Sched2Builder.action_mask`); finished: φ only."""
        o, xp = self.ops, self.ops.xp
        win = self.window() if win is None else win
        demand = o.take(self.gpus, xp.where(win >= 0, win, 0))
        fits = (win >= 0) & (demand <= self.free.sum(axis=1)[:, None]) & ~self.done[:, None]
        idle = ~(self.status == RUNNING).any(axis=1)
        phi = ~(idle & fits.any(axis=1))
        if self.hold_mask == "local":
            phi = phi & ~hold_blocked(self.free, demand, fits, self.shape.gpus_per_server, xp)
        return xp.concatenate([fits, phi[:, None]], axis=1)

    def observe(self, win: Any = None) -> Any:
        """``(B, obs_dim)`` float32 observations, as `Sched2Builder.observation` (zeros when
        the episode is over), clipped at `OBS_HIGH`."""
        o, xp, shape = self.ops, self.ops.xp, self.shape
        b, m = self.num_envs, shape.gpus_per_server
        win = self.window() if win is None else win
        now = self.now[:, None]
        # GPU state: remaining time of the job on each GPU (JobRun.remaining_work / rate)
        flat = self.slots.reshape(b, -1)
        used = flat >= 0
        j = xp.where(used, flat, 0)
        work, speed = o.take(self.work, j), o.take(self.speed, j)
        ran = now - o.take(self.start, j)
        done_work = xp.where(ran > 0, xp.minimum(work, speed * ran), 0.0)
        left = ((work - done_work).clip(min=0.0) / speed).clip(max=1e9)
        left = xp.where(o.take(self.in_round, j), o.take(self.estimate, j), left)
        gpu = xp.log1p(xp.where(used, left, 0.0) / TIME_SCALE_S)
        # the J waiting jobs: profile, demand over M, waiting time
        has = win >= 0
        w = xp.where(has, win, 0)
        feat_idx = w[:, :, None].expand(-1, -1, shape.k) if o.torch else w[:, :, None]
        if o.torch:
            prof = xp.take_along_dim(self.prof_feat, feat_idx, dim=1)
        else:
            prof = np.take_along_axis(self.prof_feat, feat_idx, axis=1)
        jobs = xp.concatenate(
            [
                prof,
                (o.take(self.gpus, w) / m)[:, :, None],
                xp.log1p((now - o.take(self.submit, w)) / TIME_SCALE_S)[:, :, None],
            ],
            axis=2,
        )
        jobs = xp.where(has[:, :, None], jobs, 0.0)
        # statistics of the other waiting jobs
        waiting, rank = self._queue()
        rest = waiting & (rank > shape.slots)
        count = rest.sum(axis=1).to(o.f64) if o.torch else rest.sum(axis=1).astype(np.float64)
        gsum = xp.where(rest, self.gpus, 0).sum(axis=1)
        wsum = xp.where(rest, self.work, 0.0).sum(axis=1)
        ssum = xp.where(rest, self.submit, 0.0).sum(axis=1)
        some = count >= 0.5
        safe = xp.where(some, count, 1.0)
        stats = xp.stack(
            [
                xp.log1p(count),
                gsum / safe / m,
                xp.log1p((wsum / safe).clip(min=0.0) / TIME_SCALE_S),
                xp.log1p((self.now - ssum / safe).clip(min=0.0) / TIME_SCALE_S),
            ],
            axis=1,
        )
        stats = xp.where(some[:, None], stats, 0.0)
        obs = xp.concatenate([gpu, jobs.reshape(b, -1), stats], axis=1)
        obs = xp.where(self.done[:, None], 0.0, obs.clip(max=OBS_HIGH))
        return obs.to(xp.float32) if o.torch else obs.astype(np.float32)

    # -- acting -----------------------------------------------------------------------------

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Take one action in every episode (ignored where the episode is over).

        Args:
            actions: ``(B,)`` ints; an illegal one acts as φ, or as the first legal pick when φ
                is illegal (as `Sched2Env.step`).

        Returns:
            ``(obs, rewards, terminated, masks, info)``: rewards are the picked jobs'
            execution effectiveness (0 for φ); ``terminated[i]`` is True on the step that
            finished episode i (then ``info["episodes"]`` lists ``(i, metrics)``).
        """
        o, xp = self.ops, self.ops.xp
        j_slots = self.shape.slots
        potential = self.effectiveness_potential() if self.reward == "incremental" else None
        win = self.window()
        mask = self.action_masks(win)
        a = self._actions(actions)
        if not bool(((a >= 0) & (a <= j_slots)).all()):
            bad = o.numpy(a)[~o.numpy((a >= 0) & (a <= j_slots))][0]
            raise ValueError(
                f"BatchedSched2Env.step: action {int(bad)} is not an integer in 0..{j_slots}"
            )
        legal = o.take(mask, a[:, None])[:, 0]
        first = mask.to(o.i64).argmax(axis=1) if o.torch else mask.argmax(axis=1)
        fallback = xp.where(mask[:, j_slots], j_slots, first)
        a = xp.where(legal, a, fallback)
        active = ~self.done
        pick = active & (a < j_slots)
        rewards = o.full((self.num_envs,), 0.0, o.f64)
        over = active & ~pick
        if bool(pick.any()):
            p = o.nonzero(pick)[0]
            rewards[p] = self._pick(p, win[p, a[p]])
            over[p] = ~self._can_pick(p)
        finished_before = self.done.clone() if o.torch else self.done.copy()
        if bool(over.any()):
            idx = o.nonzero(over)[0]
            self.in_round[idx] = False
            self._advance(idx)
        terminated = self.done & ~finished_before
        if potential is not None:
            rewards = xp.where(active, self.effectiveness_potential() - potential, 0.0)
        info: dict[str, Any] = {"episodes": []}
        for i in o.numpy(o.nonzero(terminated)[0]).tolist():
            info["episodes"].append((i, self.episode_metrics(i)))
        return self.observe(), rewards, terminated, self.action_masks(), info

    def _actions(self, actions: Any) -> Any:
        """``actions`` as a ``(B,)`` int64 array of this backend; ValueError for anything but
        ``B`` integers (no float or bool is read as an action, as `dlsched.rl.actions`)."""
        o = self.ops
        if o.torch and isinstance(actions, o.xp.Tensor):
            kind = "f" if actions.is_floating_point() or actions.dtype == o.xp.bool else "i"
            got = actions.to(device=o.device).reshape(-1)
        else:
            host = np.asarray(actions).reshape(-1)
            kind, got = host.dtype.kind, host
        if kind not in "iu":
            raise ValueError(f"BatchedSched2Env.step: actions must be integers, got {kind!r} data")
        if got.shape[0] != self.num_envs:
            raise ValueError(
                f"BatchedSched2Env.step: needs {self.num_envs} actions, got {len(got)}"
            )
        return got.to(o.i64) if o.torch and not isinstance(got, np.ndarray) else o.array(got, o.i64)

    def _pick(self, p: Any, jobs: Any) -> Any:
        """Start ``jobs`` (one per episode in ``p``) on their packing placements; their
        execution effectiveness (SCED² Eq. 2, true speed)."""
        o, xp = self.ops, self.ops.xp
        n, m = self.shape.servers, self.shape.gpus_per_server
        g = self.gpus[p, jobs]
        room = self.free[p].clone() if o.torch else self.free[p].copy()
        alloc = o.full((len(p), n), 0, o.i64)
        left = g.clone() if o.torch else g.copy()
        big = 10**9
        ar = o.arange(len(p))
        while bool((left > 0).any()):  # pack_tasks (SCED² Fig. 2), one server per pass
            whole = room >= left[:, None]
            best_fit = xp.where(whole, room, big).argmin(axis=1)
            server = xp.where(whole.any(axis=1), best_fit, room.argmax(axis=1))
            take = xp.minimum(left, room[ar, server])
            room[ar, server] -= take
            alloc[ar, server] += take
            left = left - take
        span = (alloc > 0).sum(axis=1)
        used = m - self.free[p]
        pos = o.arange(m)[None, None, :]
        lo = used[:, :, None]
        fill = (pos >= lo) & (pos < lo + alloc[:, :, None])
        self.slots[p] = xp.where(fill, jobs[:, None, None], self.slots[p])
        self.free[p] = room
        sens, best, work = self.sens[p, jobs], self.best[p, jobs], self.work[p, jobs]
        ratio = (slowdown(sens, best) / slowdown(sens, span)).clip(max=1.0)
        speed = xp.where(span == best, 1.0, ratio)
        now = self.now[p]
        self.status[p, jobs] = RUNNING
        self.start[p, jobs] = now
        self.speed[p, jobs] = speed
        self.finish[p, jobs] = now + (work - 0.0) / speed
        self.next_end[p, jobs] = self.finish[p, jobs]
        self.in_round[p, jobs] = True
        guess = estimated_speed(self.spans[p, jobs], self.prof_speed[p, jobs], span, xp)
        self.estimate[p, jobs] = work / guess.clip(min=1e-9)
        self.picks[p] += 1
        effectiveness = work / (now - self.submit[p, jobs] + work / speed).clip(min=1e-9)
        self.eff_sum[p] += effectiveness
        return effectiveness

    def _advance(self, idx: Any) -> None:
        """Run episodes ``idx`` from event to event until a waiting job fits (or they end):
        at each event time, arrivals join the queue, then the jobs ending then free their
        GPUs (as `Simulator.next_point`; the running jobs are those in ``slots``)."""
        o, xp = self.ops, self.ops.xp
        jn = self.num_jobs
        while len(idx):
            arrived = self.arrived[idx]
            nxt = o.take(self.submit[idx], xp.where(arrived < jn, arrived, 0)[:, None])[:, 0]
            nxt = xp.where(arrived < jn, nxt, math.inf)
            flat = self.slots[idx].reshape(len(idx), -1)
            busy = flat >= 0
            job = xp.where(busy, flat, 0)
            ends = xp.where(busy, o.take(self.next_end[idx], job), math.inf)
            first_end = ends.amin(axis=1) if o.torch else ends.min(axis=1)
            t = xp.minimum(nxt, first_end)
            over = ~(t < math.inf)
            if bool(over.any()):
                self.done[idx[over]] = True
                keep = ~over
                idx, t, nxt, arrived = idx[keep], t[keep], nxt[keep], arrived[keep]
                busy, job, ends = busy[keep], job[keep], ends[keep]
                if not len(idx):
                    return
            self.now[idx] = t
            coming = nxt <= t
            while bool(coming.any()):  # every arrival at t (usually one)
                rows = idx[coming]
                self.status[rows, arrived[coming]] = WAITING
                arrived = arrived + coming
                nxt = o.take(self.submit[idx], xp.where(arrived < jn, arrived, 0)[:, None])[:, 0]
                coming = (arrived < jn) & (nxt <= t)
            self.arrived[idx] = arrived
            gone = busy & (ends <= t[:, None])
            if bool(gone.any()):
                r, c = o.nonzero(gone)
                ended = job[r, c]
                self.status[idx[r], ended] = FINISHED
                self.next_end[idx[r], ended] = math.inf
                self._release(idx, gone)
            idx = idx[~self._can_pick(idx)]

    def _release(self, idx: Any, gone: Any) -> None:
        """Free the GPUs in ``gone`` (``(len(idx), N·M)``) and close up each server's row."""
        o, xp = self.ops, self.ops.xp
        slots = self.slots[idx]
        gone = gone.reshape(slots.shape)
        self.free[idx] = self.free[idx] + gone.sum(axis=2)
        slots = xp.where(gone, -1, slots)
        order = o.stable_argsort((slots < 0).to(o.i64) if o.torch else (slots < 0).astype(np.int8))
        self.slots[idx] = o.take(slots, order)

    def effectiveness_potential(self) -> Any:
        """``(B,)`` Σ over the jobs submitted so far of (effectiveness − 1): a started job's
        execution effectiveness (SCED² Eq. 2), a waiting job's best still possible one,
        ``T_ideal / (T_wait + T_ideal)``. Its change over a step is the ``"incremental"``
        reward: over an episode Σ_j (E_j − 1), the paper's return less the job count, with each
        job's loss paid in the steps where it happens (waiting, a slower placement)."""
        xp = self.ops.xp
        waiting = self.status == WAITING
        started = self.status >= RUNNING
        waited = xp.where(waiting, self.now[:, None], self.start) - self.submit
        run = xp.where(started, self.work / self.speed, self.work)
        value = self.work / (waited + run).clip(min=1e-9)
        return xp.where(waiting | started, value - 1.0, 0.0).sum(axis=1)

    # -- results ----------------------------------------------------------------------------

    def episode_metrics(self, i: int) -> dict[str, float]:
        """Metrics of episode ``i`` (as `Result.summary`'s): average effectiveness, JCT and
        makespan, seconds."""
        o = self.ops
        submit = o.numpy(self.submit[i])
        finish = o.numpy(self.finish[i])
        work = o.numpy(self.work[i])
        jct = finish - submit
        return {
            "avg_effectiveness": float(np.mean(work / jct)),
            "avg_jct_s": float(np.mean(jct)),
            "makespan_s": float(finish.max() - submit.min()),
            "avg_reward_effectiveness": float(o.numpy(self.eff_sum[i]))
            / max(int(o.numpy(self.picks[i])), 1),
            "trace_seed": float(self.trace_seeds[i]),
        }
