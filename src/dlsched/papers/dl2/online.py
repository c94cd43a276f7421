"""DL2's online phase (seed 000 §4.3): keep learning from the feedback of a running cluster.

`Dl2Online` is the ``dl2`` policy scheduler that also implements
`dlsched.live.online.OnlineLearning`, for ``dlsched live run --scheduler dl2 --learn`` (and for
the simulator through `with_feedback`):

* **Inference** (`decide`): the policy builds the slot's allocation action by action exactly as
  the ``dl2`` scheduler does (`dlsched.papers.dl2.state.Dl2Slot`), except that actions are sampled
  from the policy's softmax and, with probability ε in a poor state, replaced by DL2's
  job-aware exploration fix. Every (state, legal-action mask, action) of the slot is recorded.
* **Reward** (`observe_slot`): at the next slot the previous slot's reward is
  ``r = Σ_i t_i / E_i`` over the jobs of that slot — epochs job ``i`` trained during the slot
  over its total epochs — from the *measured* progress a scheduler sees (``JobRun.work_done``
  at the view's time, or the whole job once it reports finished); no speed model is read.
  The slot's samples go into the experience replay buffer with that reward and the next
  slot's first state.
* **Learning**: every ``slots_per_update`` slots, ``updates_per_round`` actor-critic updates
  (`dlsched.papers.dl2.algorithm.Learner`: TD value network, advantage, entropy bonus) on
  mini-batches drawn from the replay buffer (`dlsched.papers.dl2.algorithm.Replay`); the inference
  copy of the policy is refreshed after each round.
* **Saving** (`save_policy`): the last slot's samples get their reward (terminal if every job
  finished), a last round is run on samples not learnt from yet, and the policy is written in
  the format of `dlsched.papers.dl2.network.save` (plain tensors + card), so ``--scheduler
  dl2:PATH`` runs it. The value network, optimisers and counters go next to it in
  ``online_state.pt`` (tensors only): ``--learn --scheduler dl2:PATH`` continues from there.

The registered ``dl2`` scheduler is unchanged (greedy, no learning); only
`load_dl2_online` (what ``--learn`` builds) returns this class.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import torch

from dlsched.core import ClusterView, Decision, JobRun
from dlsched.papers.dl2.algorithm import Learner, Replay
from dlsched.papers.dl2.network import Dl2Config, NumpyPolicy, load, save
from dlsched.papers.dl2.state import Dl2Encoder, Dl2Slot
from dlsched.rl.card_limits import load_tensors
from dlsched.rl.checkpoint import POLICY_FILE, PolicyCard, read_card
from dlsched.schedulers.base import BaseScheduler, Scheduler, WrappingScheduler

log = logging.getLogger(__name__)

ONLINE_STATE = "online_state.pt"
"""Value network, optimisers and counters of an online run, next to ``policy.pt``."""

Sample = tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_], int]
"""(observation, legal-action mask, action) of one inference."""


@dataclass
class Dl2OnlineConfig:
    """Settings of the online phase (the RL hyper-parameters are the policy's `Dl2Config`)."""

    slots_per_update: int = 8
    """Time slots between two rounds of actor-critic updates."""
    updates_per_round: int = 1
    """Gradient updates per round (each on one mini-batch from the replay buffer)."""
    sample: bool = True
    """Sample actions from the policy and explore (True, DL2's online RL) or act greedily."""
    update_on_save: bool = True
    """`save_policy` first runs a round on the samples added since the last one."""
    seed: int = 0
    """Seeds action sampling, exploration and mini-batch draws."""

    def __post_init__(self) -> None:
        if self.slots_per_update < 1 or self.updates_per_round < 1:
            raise ValueError("slots_per_update and updates_per_round must be >= 1")


class Dl2Online(BaseScheduler):
    """The DL2 policy as a scheduler that learns online (see the module docstring).

    Args:
        policy: the policy network (trained by ``dlsched train dl2`` or shipped).
        cfg: its hyper-parameters (shape, learning rate, γ, ε, β, replay size, batch size).
        online: settings of the online phase.
        source: card of the checkpoint ``policy`` came from (kept in the saved card).
    """

    name = "dl2"
    preemptive: ClassVar[bool] = True
    is_oracle: ClassVar[bool] = False

    def __init__(
        self,
        policy: torch.nn.Module,
        cfg: Dl2Config,
        online: Dl2OnlineConfig | None = None,
        *,
        source: PolicyCard | None = None,
    ) -> None:
        self.cfg = cfg
        self.online = online or Dl2OnlineConfig()
        self.source = source
        shape = cfg.shape()
        self.encoder = Dl2Encoder(shape)
        self.learner = Learner.create(cfg, policy)
        self.replay = Replay(cfg.replay_size, shape.obs_dim, shape.num_actions)
        self.rng = np.random.default_rng(self.online.seed)
        self._net = NumpyPolicy(self.learner.policy)
        self.slots = 0
        """Slots observed (``observe_slot`` calls) over this object's life."""
        self.rewards: list[float] = []
        """Reward of every slot that has been given one, in order."""
        self.stats: list[dict[str, float]] = []
        """Losses, entropy and mean |advantage| of every update."""
        self.samples = 0
        """Samples added to the replay buffer."""
        self._since_round = 0  # slots rewarded since the last round of updates
        self._current: list[Sample] = []
        self._decided: ClusterView | None = None
        self._pending: list[Sample] = []
        self._pending_jobs: list[tuple[JobRun, float]] = []

    # -- inference -------------------------------------------------------------------------------

    @property
    def updates(self) -> int:
        """Actor-critic updates made (including those of the run this policy continues)."""
        return self.learner.updates

    def reset(self) -> None:
        """A new run starts: close the previous one's last slot (the learner is kept)."""
        self.end_episode()

    def decide(self, view: ClusterView) -> Decision:
        slot = self.encoder.start(view)
        samples: list[Sample] = []
        while True:
            mask = slot.action_mask()
            if not mask.any():
                break
            obs = slot.observation()
            action = self._act(slot, obs, mask)
            samples.append((obs, mask, action))
            if slot.apply(action):
                break
        self._current, self._decided = samples, view
        return slot.decision()

    def _act(self, slot: Dl2Slot, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> int:
        cfg = self.cfg
        if not self.online.sample:
            return int(np.argmax(np.where(mask, self._net.logits(obs), -np.inf)))
        if cfg.exploration and self.rng.random() < cfg.epsilon:
            fixes = slot.poor_state_fixes()
            if fixes:
                return int(fixes[int(self.rng.integers(len(fixes)))])
        logits = np.where(mask, self._net.logits(obs).astype(np.float64), -np.inf)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        return int(self.rng.choice(len(probs), p=probs))

    # -- feedback ----------------------------------------------------------------------------------

    def observe_slot(self, view: ClusterView, decision: Decision) -> None:
        """Reward the previous slot from ``view``'s measured progress; learn every N slots.

        Args:
            view: the view this scheduler just decided from (progress as measured now).
            decision: what it decided (the samples recorded by `decide` stand for it).

        Raises:
            ValueError: ``view`` is not the one of the latest `decide` call.
        """
        if view is not self._decided:
            raise ValueError("observe_slot: call decide(view) with this view first")
        current = self._current
        if self._pending:
            reward = self._progress_reward(view.now_s)
            next_obs = current[0][0] if current else self.encoder.start(view).observation()
            self._add(reward, next_obs, done=False)
        self._pending = current
        self._pending_jobs = [(run, run.work_done(view.now_s)) for run in view.jobs()]
        self._current, self._decided = [], None
        self.slots += 1
        if self._since_round >= self.online.slots_per_update:
            self.learn()

    def _progress_reward(self, now_s: float) -> float:
        """``Σ_i t_i / E_i`` of the pending slot's jobs up to ``now_s`` (measured progress)."""
        reward = 0.0
        for run, before in self._pending_jobs:
            total = max(run.spec.total_work, 1e-12)
            done = run.spec.total_work if run.finished else run.work_done(now_s)
            reward += max(0.0, done - before) / total
        return reward

    def _add(self, reward: float, next_obs: npt.NDArray[np.float32], *, done: bool) -> None:
        for obs, mask, action in self._pending:
            self.replay.add(obs, mask, action, reward, next_obs, done)
        self.samples += len(self._pending)
        self.rewards.append(reward)
        self._since_round += 1
        self._pending, self._pending_jobs = [], []

    def end_episode(self) -> None:
        """The run is over: reward the last slot if every one of its jobs finished (a terminal
        transition); otherwise (a horizon cut it short) its samples are dropped, having no next
        state to bootstrap from."""
        if not self._pending:
            return
        if all(run.finished for run, _ in self._pending_jobs):
            reward = self._progress_reward(0.0)  # finished jobs count as fully done
            self._add(reward, np.zeros_like(self._pending[0][0]), done=True)
        else:
            log.info("dl2 online: last slot dropped (jobs left unfinished)")
            self._pending, self._pending_jobs = [], []

    def learn(self) -> list[dict[str, float]]:
        """One round: ``updates_per_round`` actor-critic updates on replay mini-batches."""
        self._since_round = 0
        if self.replay.size == 0:
            return []
        cfg = self.cfg
        out = []
        for _ in range(self.online.updates_per_round):
            if cfg.replay:
                n = min(cfg.batch_size, self.replay.size)
                batch = self.replay.batch(self.rng.integers(self.replay.size, size=n))
            else:
                batch = self.replay.latest(min(cfg.batch_size, self.replay.size))
            out.append(self.learner.update(batch))
        self.learner.policy.eval()
        self._net = NumpyPolicy(self.learner.policy)
        self.stats += out
        log.info(
            "dl2 online: update %d after %d slots (replay %d samples, entropy %.3f)",
            self.learner.updates,
            self.slots,
            self.replay.size,
            out[-1]["entropy"],
        )
        return out

    # -- checkpoints -------------------------------------------------------------------------------

    def save_policy(self, path: Path) -> Path:
        """Write the updated policy as a DL2 checkpoint directory ``path``; returns its
        ``policy.pt``. Loads with ``--scheduler dl2:PATH``."""
        self.end_episode()
        if self.online.update_on_save and self._since_round > 0:
            self.learn()
        src = self.source
        steps = dict(src.steps) if src is not None else {}
        steps["online_slots"] = steps.get("online_slots", 0) + len(self.rewards)
        steps["online_updates"] = self.learner.updates
        mean_reward = float(np.mean(self.rewards)) if self.rewards else 0.0
        save(
            path,
            self.learner.policy,
            self.cfg,
            workload=src.workload if src is not None else "live",
            workload_params=dict(src.workload_params) if src is not None else {},
            seeds={**(src.seeds if src is not None else {}), "online": [self.online.seed]},
            steps=steps,
            validation={"online_mean_slot_reward": mean_reward},
            notes=(
                f"online RL (dl2 --learn): {len(self.rewards)} slots rewarded, "
                f"{len(self.stats)} updates in this run, from: "
                + (src.notes if src is not None else "an untrained policy")
            ),
        )
        torch.save(
            {
                "value": self.learner.value.state_dict(),
                "policy_opt": self.learner.policy_opt.state_dict(),
                "value_opt": self.learner.value_opt.state_dict(),
                "updates": torch.tensor(self.learner.updates),
                "baseline": torch.tensor(self.learner.baseline),
            },
            Path(path) / ONLINE_STATE,
        )
        return Path(path) / POLICY_FILE

    def restore_online_state(self, directory: Path) -> bool:
        """Continue the critic and optimisers of a previous online run saved in ``directory``
        (tensors only); False if it holds none."""
        state_file = Path(directory) / ONLINE_STATE
        if not state_file.exists():
            return False
        state = load_tensors(state_file)  # one-line ValueError for anything but tensors
        try:
            self.learner.value.load_state_dict(state["value"])
            self.learner.policy_opt.load_state_dict(state["policy_opt"])
            self.learner.value_opt.load_state_dict(state["value_opt"])
            self.learner.updates = int(state["updates"])
            self.learner.baseline = float(state["baseline"])
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            raise ValueError(f"{state_file}: not this policy's online state ({first})") from None
        return True


def config_from_card(card: PolicyCard) -> Dl2Config:
    """The full `Dl2Config` recorded in a checkpoint's card (unknown keys ignored)."""
    known = {f.name for f in fields(Dl2Config)}
    hp: dict[str, Any] = {k: v for k, v in card.hyperparams.items() if k in known}
    for key in ("hidden", "job_types"):
        if key in hp:
            hp[key] = tuple(hp[key])
    return Dl2Config(**hp)


def load_dl2_online(
    path: str | Path | None = None, online: Dl2OnlineConfig | None = None
) -> Dl2Online:
    """The learning DL2 scheduler from checkpoint ``path`` (default: the shipped policy).

    If ``path`` holds an ``online_state.pt`` (saved by a previous ``--learn`` run), its value
    network and optimisers are restored too.
    """
    from dlsched.papers.dl2.scheduler import SHIPPED

    where = Path(path) if path is not None else SHIPPED
    if where.name == POLICY_FILE:
        where = where.parent
    policy, _ = load(where)
    card = read_card(where)
    scheduler = Dl2Online(policy, config_from_card(card), online, source=card)
    if scheduler.restore_online_state(where):
        log.info("dl2 online: continuing the critic of %s", where)
    return scheduler


class _WithFeedback(WrappingScheduler):
    """Calls ``observe_slot(view, decision)`` after every decision, as the live loop does."""

    def __init__(self, inner: Dl2Online) -> None:
        super().__init__(inner)
        self.online = inner

    def decide(self, view: ClusterView) -> Decision:
        decision = self.online.decide(view)
        self.online.observe_slot(view, decision)
        return decision


def with_feedback(scheduler: Dl2Online) -> Scheduler:
    """``scheduler`` for `dlsched.simulate`: it learns from every simulated slot, as in a live
    ``--learn`` run (call ``scheduler.end_episode()`` after the run for the last slot)."""
    return _WithFeedback(scheduler)
