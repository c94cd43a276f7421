"""DeepRM's own method, CleanRL style: ``dlsched train deeprm --paper`` (DeepRM §3.3, §4.1).

One iteration (`PaperReinforce.step`), as Fig. 3's pseudo-code: every one of the ``jobsets``
training jobsets is run ``episodes`` (N = 20) times with actions sampled from the current
policy, the ``jobsets × N`` episodes stepped in lock-step batches
(`dlsched.papers.deeprm.batched_env.make_batch`: NumPy on the CPU, torch tensors on a GPU), one
batch per part of the jobsets, the parts in ``workers`` processes on the CPU (each part samples
from its own generator: a run does not depend on the processes);
each decision's return ``v_t`` (γ = 1: minus the slowdowns still to come) minus the baseline
``b_t``, the mean of ``v_t`` over the N episodes of its jobset at the same time step ``t``, is
its advantage; one RMSProp step (lr 0.001, ρ 0.9, ε 1e-9) on
``−Σ log π(a|s)·(v − b) / #decisions``.

The baseline is taken per **time step** of the cluster, as the paper's text says ("the average
of the return values, v_t, where the average is taken at the same timestep t across all
episodes"; a time step is what passes when ∅ is chosen, §3.2). The authors' code indexes it by
*decision* instead (``pg_re.py``), which lines up decisions of different times once episodes
schedule different numbers of jobs; ``baseline="decision"`` keeps that for comparison
(``benchmarks/RESULTS.md`` has what each does). Every value a row of the log holds is in
`PaperStats`, diagnostics included (entropy, gradient norm, advantage scale).

`PAPER_DEVIATIONS` lists what still differs from the paper and why (README and card).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from dlsched.papers.deeprm.batched_env import make_batch, resolve_device
from dlsched.papers.deeprm.config import BUDGET_ROUNDS
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.paper_config import (  # re-exported: paper.PaperConfig etc.
    PAPER_DEVIATIONS,
    PAPER_LOADS,
    Baseline,
    PaperConfig,
    PaperStats,
    card_notes,
)
from dlsched.papers.deeprm.shape import Jobset

__all__ = [
    "PAPER_DEVIATIONS",
    "PAPER_LOADS",
    "Baseline",
    "PaperConfig",
    "PaperReinforce",
    "PaperStats",
    "card_notes",
]

log = logging.getLogger(__name__)


class PaperReinforce:
    """DeepRM's REINFORCE trainer (module docstring); `Reinforce`'s interface for
    `dlsched.papers.deeprm.train.train_deeprm`."""

    stats_type = PaperStats

    def __init__(self, config: PaperConfig, net: DeepRMPolicyNet | None = None) -> None:
        self.config = config
        self.device = torch.device(resolve_device(config.device))
        torch.manual_seed(config.seed)
        self.rng = np.random.default_rng(config.seed)
        self.gen = torch.Generator(device=self.device).manual_seed(config.seed)
        self.net = (net or DeepRMPolicyNet(config.shape, config.hidden)).to(self.device)
        self.optimizer = torch.optim.RMSprop(
            self.net.parameters(), lr=config.lr, alpha=config.rms_alpha, eps=config.rms_eps
        )
        self.iteration = 0
        self.elapsed_s = 0.0
        self.history: list[PaperStats] = []
        self._jobsets: list[Jobset] | None = None
        self._pool: Any = None

    def __enter__(self) -> PaperReinforce:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes."""
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None

    pretrained_epochs = 0
    """The paper's method has no pre-training."""

    def pretrain(self, stop: Callable[[], bool] | None = None) -> float:
        """The paper's method has no pre-training."""
        raise ValueError("train deeprm --paper: no pre-training in the paper's method")

    def jobsets(self) -> list[Jobset]:
        """The training jobsets (generated once)."""
        if self._jobsets is None:
            self._jobsets = self.config.training_jobsets(range(self.config.jobsets))
        return self._jobsets

    def step(self, stop: Callable[[], bool] | None = None) -> PaperStats:
        """One training iteration: rollouts, baseline, one RMSProp step; ``stop`` is asked
        between rounds of parts (True: no more; the gradient comes from those done). Parts
        (``chunk`` jobsets each, or the jobsets split over ``workers``, in `BUDGET_ROUNDS`
        rounds with ``stop``) run in the worker processes, one round of ``workers`` at a time."""
        cfg = self.config
        wall0 = time.perf_counter()
        num = self.config.jobsets
        workers = self._workers()
        rounds = 1 if stop is None else BUDGET_ROUNDS
        size = cfg.chunk or -(-num // (workers * rounds))
        tasks = [(i, range(a, min(a + size, num))) for i, a in enumerate(range(0, num, size))]
        before = [p.detach().clone() for p in self.net.parameters()]
        parts: list[dict[str, Any]] = []
        for first in range(0, len(tasks), workers):
            if parts and stop is not None and stop():
                break
            parts += self._map(tasks[first : first + workers])
        done = sum(len(r) for _, r in tasks[: len(parts)])
        total = sum(p["samples"] for p in parts)
        for k, param in enumerate(self.net.parameters()):
            grad = parts[0]["grads"][k].to(self.device)
            for part in parts[1:]:  # in part order: the same sum whatever the processes
                grad = grad + part["grads"][k].to(self.device)
            param.grad = grad / max(total, 1)
        grad_norm = _norm([p.grad for p in self.net.parameters() if p.grad is not None])
        self._warm_optimizer()
        self.optimizer.step()
        update = _norm([p.detach() - b for p, b in zip(self.net.parameters(), before, strict=True)])
        returns = np.concatenate([p["returns"] for p in parts])
        adv = np.concatenate([p["adv"] for p in parts])
        vals = np.concatenate([p["values"] for p in parts])
        self.iteration += 1
        took = time.perf_counter() - wall0
        self.elapsed_s += took
        stats = PaperStats(
            iteration=self.iteration,
            wall_s=self.elapsed_s,
            iteration_s=took,
            mean_reward=float(returns.mean()),
            max_reward=float(returns.max()),
            mean_slowdown=float(np.nanmean(np.concatenate([p["slowdown"] for p in parts]))),
            samples=total,
            dropped=sum(p["dropped"] for p in parts),
            truncated=sum(p["truncated"] for p in parts),
            jobsets=done,
            entropy=sum(p["entropy"] for p in parts) / max(total, 1),
            grad_norm=grad_norm,
            update_norm=update,
            adv_std=float(adv.std()) if adv.size else float("nan"),
            return_std=float(vals.std()) if vals.size else float("nan"),
            void_share=sum(p["void"] for p in parts) / max(total, 1),
            withheld_share=sum(p["withheld"] for p in parts)
            / max(1, sum(p["ticks"] for p in parts)),
            cpu_s=sum(p["cpu_s"] for p in parts),
        )
        self.history.append(stats)
        log.debug("deeprm paper iteration %d: %s", self.iteration, stats)
        return stats

    def _workers(self) -> int:
        """Processes for the rollouts: ``workers`` on the CPU, one on a GPU."""
        return max(1, self.config.workers) if self.device.type == "cpu" else 1

    def _map(self, tasks: list[tuple[int, range]]) -> list[dict[str, Any]]:
        """Run parts ``(index, jobset ids)``: here, or one a worker process."""
        if len(tasks) <= 1 or self._workers() <= 1:
            return [self.part(self.iteration, i, ids) for i, ids in tasks]
        if self._pool is None:  # spawn: no forked torch state
            ctx = mp.get_context("spawn")
            self._pool = ctx.Pool(self._workers(), initializer=_worker_init)
        state = {k: v.detach().cpu().numpy() for k, v in self.net.state_dict().items()}
        jobs = [(self.config, state, self.iteration, i, ids) for i, ids in tasks]
        return list(self._pool.map(_run_part, jobs))

    def part(self, iteration: int, index: int, ids: range) -> dict[str, Any]:
        """Roll out part ``index`` (training jobsets ``ids``) of iteration ``iteration + 1``
        with the current network: its statistics and its policy gradient's sum (``"grads"``,
        one CPU tensor per parameter). Its actions are sampled from a generator seeded by
        (seed, iteration, index) alone."""
        cpu0 = time.process_time()
        part_seed = np.random.SeedSequence([self.config.seed, iteration, index])
        self.gen.manual_seed(int(part_seed.generate_state(1, np.uint64)[0]))
        self.net.zero_grad()
        if self.config.fresh_jobsets:
            out = self._rollout(self.config.training_jobsets(ids, iteration))
        else:
            jobsets = self.jobsets()
            out = self._rollout([jobsets[i] for i in ids])
        out["grads"] = [
            (p.grad if p.grad is not None else torch.zeros_like(p)).detach().clone().cpu()
            for p in self.net.parameters()
        ]
        out["cpu_s"] = time.process_time() - cpu0
        return out

    def _warm_optimizer(self) -> None:
        """After `init_from`: RMSProp's accumulator starts at the first gradient squared (at
        zero, every weight would first move ≈ 3 × lr whatever its gradient)."""
        if not self.config.init_from or self.optimizer.state:
            return
        for p in self.net.parameters():
            if p.grad is not None:
                step = torch.zeros((), dtype=torch.float32)
                self.optimizer.state[p] = {"step": step, "square_avg": p.grad.detach() ** 2}

    def _rollout(self, jobsets: list[Jobset]) -> dict[str, Any]:
        """Run N episodes of each jobset, accumulate the policy gradient of their decisions
        into the network's ``.grad`` (a sum), and return the iteration's statistics."""
        cfg, dev = self.config, self.device
        n = cfg.episodes
        on_numpy = cfg.backend == "numpy" or (cfg.backend == "auto" and dev.type == "cpu")
        batch = make_batch(
            [js for js in jobsets for _ in range(n)],
            cfg.shape,
            objective=cfg.objective,
            max_steps=cfg.max_steps,
            device=str(dev),
            backend="numpy" if on_numpy else "torch",
        )
        num = len(jobsets) * n
        with torch.no_grad():
            table = self.net.prefix_table()
        states, masks, actions, clocks, rows_kept, rewards = [], [], [], [], [], []
        void = withheld = ticks = 0
        while True:
            active = _t(batch.active, dev)
            if not bool(active.any()):
                break
            mask = _t(batch.action_masks(), dev)
            fits_now = _fits_now(batch, dev)
            ask = active if not cfg.mask_invalid else active & mask[:, 1:].any(dim=1)
            rows = torch.nonzero(ask)[:, 0]
            act = torch.zeros(num, dtype=torch.int64, device=dev)
            if rows.numel():
                index = _t(batch.index(rows.cpu().numpy() if on_numpy else rows), dev)  # type: ignore[arg-type]
                with torch.no_grad():
                    logits = self.net.forward_index(index, table)
                if cfg.mask_invalid:
                    logits = logits.masked_fill(~mask[rows], float("-inf"))
                chosen = torch.multinomial(F.softmax(logits, dim=1), 1, generator=self.gen)[:, 0]
                act[rows] = chosen
                states.append(index.to(torch.int16))
                masks.append(mask[rows])
                actions.append(chosen)
                clocks.append(_t(batch.now, dev)[rows])
                rows_kept.append(rows)
            now = _t(batch.now, dev).clone()
            reward, advanced = batch.step(act.cpu().numpy() if on_numpy else act)  # type: ignore[arg-type]
            advanced = _t(advanced, dev)
            if rows.numel():
                valid = mask[rows].gather(1, chosen[:, None])[:, 0] & (chosen > 0)
                void += int((~valid).sum())
            withheld += int((advanced & fits_now.any(dim=1)).sum())
            ticks += int(advanced.sum())
            rewards.append((now, _t(reward, dev).to(torch.float64), advanced))
        return self._learn(batch, jobsets, rewards, states, masks, actions, clocks, rows_kept) | {
            "void": void,
            "withheld": withheld,
            "ticks": ticks,
        }

    def _learn(
        self,
        batch: Any,
        jobsets: list[Jobset],
        rewards: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
        states: list[torch.Tensor],
        masks: list[torch.Tensor],
        actions: list[torch.Tensor],
        clocks: list[torch.Tensor],
        rows_kept: list[torch.Tensor],
    ) -> dict[str, Any]:
        """Returns, baselines and the policy-gradient backward pass of one lock-step batch."""
        cfg, dev, n = self.config, self.device, self.config.episodes
        num = len(jobsets) * n
        # rewards per time step of each episode: (K, B); a decision at time k has return R[k]
        horizon = max(int(r[0].max()) for r in rewards) + 2 if rewards else 1
        per_step = torch.zeros((horizon, num), dtype=torch.float64, device=dev)
        dec = torch.zeros((len(rewards), num), dtype=torch.float64, device=dev)
        for i, (now, reward, advanced) in enumerate(rewards):
            per_step[now, torch.arange(num, device=dev)] += torch.where(advanced, reward, 0.0)
            dec[i] = reward
        step_ret = _returns(per_step, cfg.gamma)
        if not states:
            return _empty(batch, step_ret)
        state = torch.cat(states).long()
        mask = torch.cat(masks)
        action = torch.cat(actions)
        clock = torch.cat(clocks)
        row = torch.cat(rows_kept)
        group = row // n
        if cfg.baseline == "step":
            value = step_ret[clock, row]
            base = step_ret.reshape(horizon, -1, n).mean(dim=2)[clock, group]
        else:  # the code's: by decision index within the episode (every lock-step of a row)
            dec_ret = _returns(dec, cfg.gamma)
            order = torch.cat([torch.full_like(r, i) for i, r in enumerate(rows_kept)])
            seen = torch.zeros((len(rewards), num), dtype=torch.bool, device=dev)
            seen[order, row] = True
            index = seen.long().cumsum(dim=0) - 1  # decision index of each lock-step per row
            padded = torch.zeros_like(dec_ret)
            padded[index[order, row], row] = dec_ret[order, row]
            value = padded[index[order, row], row]
            base = padded.reshape(len(rewards), -1, n).mean(dim=2)[index[order, row], group]
        adv = (value - base).float()
        logits = self.net.forward_index(state)
        if cfg.mask_invalid:
            logits = logits.masked_fill(~mask, float("-inf"))
        logp = F.log_softmax(logits, dim=1)
        chosen = logp.gather(1, action[:, None])[:, 0]
        (-(chosen * adv).sum()).backward()
        probs = logp.exp()
        entropy = -(probs * logp.nan_to_num(0.0, neginf=0.0)).sum(dim=1)
        return _empty(batch, step_ret) | {
            "samples": int(action.numel()),
            "entropy": float(entropy.detach().sum()),
            "adv": adv.detach().cpu().numpy(),
            "values": value.cpu().numpy(),
        }


_WORKER: dict[str, PaperReinforce] = {}


def _worker_init() -> None:
    torch.set_num_threads(1)


def _run_part(job: tuple[PaperConfig, dict[str, np.ndarray], int, int, range]) -> dict[str, Any]:
    """A worker process's part: `PaperReinforce.part` on its own copy of the trainer (built
    once, jobsets included), with the main process's current weights."""
    config, state, iteration, index, ids = job
    trainer = _WORKER.get("trainer")
    if trainer is None or trainer.config != config:
        trainer = _WORKER["trainer"] = PaperReinforce(config)
    trainer.net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    return trainer.part(iteration, index, ids)


def _empty(batch: Any, step_ret: torch.Tensor) -> dict[str, Any]:
    """Per-episode statistics of a finished batch (no decisions recorded yet)."""
    if isinstance(batch.dropped, np.ndarray):
        slowdown = np.array([_mean(batch.slowdowns(i)) for i in range(len(batch.rows))])
    else:
        slowdown = batch.mean_slowdowns().cpu().numpy()
    return {
        "samples": 0,
        "entropy": 0.0,
        "adv": np.zeros(0),
        "values": np.zeros(0),
        "returns": step_ret[0].cpu().numpy(),
        "slowdown": slowdown,
        "dropped": int(_t(batch.dropped, torch.device("cpu")).sum()),
        "truncated": int(_t(batch.truncated, torch.device("cpu")).sum()),
    }


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")


def _t(values: Any, dev: torch.device) -> torch.Tensor:
    """A NumPy array or tensor as a tensor on ``dev``."""
    if isinstance(values, np.ndarray):
        return torch.from_numpy(values).to(dev)
    return values.to(dev)


def _fits_now(batch: Any, dev: torch.device) -> torch.Tensor:
    """``(B, M)``: slot jobs that fit at the current step."""
    fits, first = batch.fits()
    return _t(fits, dev) & (_t(first, dev) == 0)


def _returns(rewards: torch.Tensor, gamma: float) -> torch.Tensor:
    """``v_t = Σ_{s>=t} γ^{s−t} r_s`` along axis 0."""
    if gamma == 1.0:
        return rewards.flip(0).cumsum(0).flip(0)
    out = torch.zeros_like(rewards)
    acc = torch.zeros_like(rewards[0])
    for t in range(rewards.shape[0] - 1, -1, -1):
        acc = rewards[t] + gamma * acc
        out[t] = acc
    return out


def _norm(tensors: list[torch.Tensor]) -> float:
    return float(sum(float((t.double() ** 2).sum()) for t in tensors) ** 0.5)
