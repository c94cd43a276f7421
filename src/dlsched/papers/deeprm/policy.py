"""A trained DeepRM policy as a dlsched scheduler (`DeepRMScheduler`), and its checkpoints.

The scheduler keeps the environment's own bookkeeping (`dlsched.papers.deeprm.state`) next to the
`Simulator`, so that the policy sees at each scheduling point exactly the state it was trained
on:

* the ``T``-step cluster image is rebuilt from the view: running jobs hold their demand for
  their remaining duration (``remaining work / measured rate``, in whole steps), and jobs the
  policy reserved for a later step hold theirs from that step;
* new pending jobs take the first empty slot, else join the backlog; jobs the environment
  would drop (backlog full) wait in an overflow queue instead — the Simulator never drops a
  job — and join the backlog as it empties (`DeepRMEncoder.overflowed` counts them);
* a chosen job is reserved at the first step at which it fits (as in the environment); it is
  started when that step comes;
* ∅ is not offered while the cluster is idle and a slot job fits (``idle_guard``): a policy
  trained with sampling may still rank ∅ first there, and its arg-max would never start
  anything once arrivals stop; nor, for a policy trained with every action offered, an empty
  or unfitting slot (it acts as ∅).

With a ranked shape (`DeepRMShape.ranked`, the shipped ``deeprm`` policy) the slots hold the
``M`` shortest pending jobs not yet reserved, the backlog all the others (no overflow), and only
jobs that fit now can be chosen, exactly as in the environment's ranked view.

Shipped policies (`POLICY_DIR`; which one a name runs: `dlsched.papers.deeprm.fits`): ``ranked``
is ``deeprm``'s (`DEFAULT_POLICY`); ``load0.7`` and ``load1.3`` see the paper's state (slots in
arrival order) and were trained on 50-step jobsets at those loads: ``deeprm:LOAD`` runs the one
nearest ``LOAD`` (the paper's reproduction).

A reserved job's step is always a completion in the Simulator (the job fits only once something
ends), so an event-driven run reaches it.

The policy acts at every scheduling point the Simulator offers: every arrival and completion on
the ``deeprm`` workload. DeepRM also lets it act at steps where nothing happens; run with
``interval_s=1.0`` (one step) to give it those too, as the experiments do.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from dlsched.core import ClusterView, Decision, JobRun, JobSpec, Resources
from dlsched.papers.deeprm.fits import DEFAULT_POLICY as DEFAULT_POLICY  # re-exported
from dlsched.papers.deeprm.fits import PAPER_POLICY as PAPER_POLICY  # re-exported
from dlsched.papers.deeprm.fits import POLICY_DIR as POLICY_DIR  # re-exported
from dlsched.papers.deeprm.fits import image_cannot_show, policy_path, spec_profile
from dlsched.papers.deeprm.fits import shipped_policies as shipped_policies  # re-exported
from dlsched.papers.deeprm.net import DeepRMPolicyNet
from dlsched.papers.deeprm.state import DeepRMShape, fit_table, render
from dlsched.rl.checkpoint import PolicyCard, check_card, load_checkpoint, read_card
from dlsched.rl.policy_scheduler import PolicyScheduler
from dlsched.workloads.deeprm import STEP_S


@dataclass
class DeepRMEncoder:
    """DeepRM's slots, backlog and reservations across the scheduling points of one run.

    Args:
        shape: state sizes the policy was trained with.
    """

    shape: DeepRMShape = field(default_factory=DeepRMShape)
    slots: list[int | None] = field(default_factory=list)
    backlog: deque[int] = field(default_factory=deque)
    overflow: deque[int] = field(default_factory=deque)
    reserved: dict[int, int] = field(default_factory=dict)
    """Job id → step at which it was reserved to start."""
    seen: set[int] = field(default_factory=set)
    rank: dict[int, tuple[int, float, int]] = field(default_factory=dict)
    """Job id → (duration in steps, submit time s, id): the ranked view's slot order."""
    overflowed: int = 0
    """Jobs that found the backlog full (the environment would have dropped them)."""
    offered: list[float] = field(default_factory=lambda: [0.0, 0.0])
    """Σ duration × demand of the jobs seen, per resource (slot-steps), for the load estimate."""
    first_step: int | None = None
    idle_guard: bool = True
    """Do not offer ∅ while nothing runs or is reserved and a slot job fits (see
    `dlsched.papers.deeprm.algorithm.policy_chooser`): an arg-max policy would otherwise wait
    forever."""
    work_conserving: bool = False
    """Offer only the slot jobs that fit now, and ∅ only when none does (the environment's
    ``work_conserving`` option)."""
    every_action: bool = False
    """Offer every slot, as a policy trained with every action offered (``mask_invalid``
    False: ``train deeprm --paper``) was: an empty slot or a job that fits nowhere in the
    horizon acts as ∅. False: only the slot jobs that fit."""
    observation: str = "image"
    """``"image"`` (DeepRM's) or ``"compact"`` (`dlsched.papers.deeprm.compact`), as the
    environment's ``observation`` option."""
    window: str = "arrival"
    """``"shortest"``: the slots hold the shortest waiting jobs, shortest first (the
    environment's ``window`` option); ``"arrival"``: DeepRM's first come, first in."""
    lengths: dict[int, int] = field(default_factory=dict)
    """Job id → duration in steps, of the jobs seen (for ``window="shortest"``)."""

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the previous run."""
        self.slots = [None] * self.shape.slots
        self.backlog = deque()
        self.overflow = deque()
        self.reserved = {}
        self.seen = set()
        self.rank = {}
        self.overflowed = 0
        self.offered = [0.0] * self.shape.num_res
        self.first_step = None
        self.lengths = {}

    def cannot_run(self, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
        """Why DeepRM's image cannot show some job as it is: longer than its ``horizon``
        steps or needing more than its ``res_slots`` units of a resource (the ``deeprm``
        workload's jobs always fit); None when every job fits."""
        return image_cannot_show(self.shape, jobs)

    def load_estimate(self, now: int) -> float:
        """Offered load seen so far: Σ duration × demand of the arrived jobs over the capacity of
        the steps since the first arrival (an unbiased, at first noisy, estimate)."""
        start = self.first_step if self.first_step is not None else now
        span = max(now - start + 1, 1)
        return float(np.mean(self.offered)) / (self.shape.res_slots * span)

    def start(self, view: ClusterView) -> DeepRMBuilder:
        """A builder for this scheduling point (updates slots and backlog with new arrivals)."""
        now = round(view.now_s / STEP_S)
        pending = {run.job_id: run for run in view.pending}
        self.slots = [j if j in pending else None for j in self.slots]
        self.backlog = deque(j for j in self.backlog if j in pending)
        self.overflow = deque(j for j in self.overflow if j in pending)
        self.reserved = {j: s for j, s in self.reserved.items() if j in pending}
        fresh = sorted(
            (r for r in view.pending if r.job_id not in self.seen),
            key=lambda r: (r.spec.submit_time_s, r.job_id),
        )
        for run in fresh:
            self.seen.add(run.job_id)
            if self.first_step is None:
                self.first_step = round(run.spec.submit_time_s / STEP_S)
            length, demand = _profile(run)
            self.lengths[run.job_id] = length
            self.rank[run.job_id] = (length, run.spec.submit_time_s, run.job_id)
            for r in range(self.shape.num_res):
                self.offered[r] += length * demand[r]
            self._admit(run.job_id)
        self._refill()
        used = np.zeros((self.shape.horizon, self.shape.num_res), np.int64)
        for run in view.running:
            rem = _remaining_steps(run, view.now_s)
            used[: min(rem, self.shape.horizon)] += _profile(run)[1]
        overdue = []
        for job, step in self.reserved.items():
            length, demand = _profile(pending[job])
            if step < now:
                overdue.append(job)
                continue
            off = step - now
            used[off : min(off + length, self.shape.horizon)] += demand
        builder = DeepRMBuilder(self, now, used, pending)
        for job in overdue:  # missed its step (no scheduling point then): first fit from now
            del self.reserved[job]
            builder.reserve_job(job)
        return builder

    def _admit(self, job: int) -> None:
        if self.shape.ranked:
            self.backlog.append(job)
            return
        if None in self.slots:
            self.slots[self.slots.index(None)] = job
        elif len(self.backlog) < self.shape.backlog and not self.overflow:
            self.backlog.append(job)
        else:
            self.overflow.append(job)
            self.overflowed += 1

    def _refill(self) -> None:
        """Move the backlog's head into empty slots, the overflow's into the backlog; in the
        ranked view, the ``M`` shortest waiting jobs into the slots (`DeepRMShape.ranked`)."""
        if self.shape.ranked:
            waiting = sorted(
                [j for j in self.slots if j is not None] + list(self.backlog),
                key=lambda j: self.rank[j],
            )
            m = self.shape.slots
            self.slots = [*waiting[:m], *[None] * (m - len(waiting[:m]))]
            self.backlog = deque(waiting[m:])
            return
        for i, job in enumerate(self.slots):
            if job is None and self.backlog:
                self.slots[i] = self.backlog.popleft()
        while self.overflow and len(self.backlog) < self.shape.backlog:
            self.backlog.append(self.overflow.popleft())
        if None in self.slots and self.overflow:
            self._refill()
            return
        if self.window == "shortest":
            waiting = [j for j in self.slots if j is not None] + list(self.backlog)
            waiting.sort(key=lambda j: (self.lengths.get(j, 0), j))
            m = self.shape.slots
            self.slots = [*waiting[:m], *[None] * max(0, m - len(waiting))]
            self.backlog = deque(waiting[m:])


def _profile(run: JobRun) -> tuple[int, npt.NDArray[np.int64]]:
    """(duration in steps, demand in slots of (cpu, mem)) of a DeepRM job."""
    return spec_profile(run.spec)


def _remaining_steps(run: JobRun, now_s: float) -> int:
    """Whole steps the running job still holds its resources (at its measured rate)."""
    rate = run.rate if run.rate > 0 else 1.0
    return max(0, math.ceil(run.remaining_work(now_s) / rate / STEP_S - 1e-9))


class DeepRMBuilder:
    """One scheduling point: the policy reserves slot jobs until it picks ∅."""

    def __init__(
        self, encoder: DeepRMEncoder, now: int, used: npt.NDArray[np.int64], pending: dict
    ) -> None:
        self.encoder = encoder
        self.shape = encoder.shape
        self.now = now
        self.used = used
        self.pending: dict[int, JobRun] = pending
        self._fits: tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]] | None = None

    def _slot_arrays(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        m, d = self.shape.slots, self.shape.num_res
        length = np.zeros((1, m), np.int64)
        demand = np.zeros((1, m, d), np.int64)
        for i, job in enumerate(self.encoder.slots):
            if job is not None:
                length[0, i], demand[0, i] = _profile(self.pending[job])
        return length, demand

    def _fit(self) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        if self._fits is None:
            length, demand = self._slot_arrays()
            fits, first = fit_table(self.used[None], length, demand, self.shape.res_slots)
            if self.shape.ranked:  # only jobs that fit now are choices
                fits &= first == 0
            self._fits = fits[0], first[0]
        return self._fits

    def observation(self) -> npt.NDArray[np.float32]:
        length, demand = self._slot_arrays()
        backlog = np.array([min(len(self.encoder.backlog), self.shape.backlog)])
        if self.encoder.observation == "compact":
            from dlsched.papers.deeprm.compact import compact_observation

            return compact_observation(self.shape, self.used[None], length, demand, backlog)[0]
        return render(self.shape, self.used[None], length, demand, backlog)[0].ravel()

    def action_mask(self) -> npt.NDArray[np.bool_]:
        fits, first = self._fit()
        if self.encoder.work_conserving:
            now = fits & (first == 0)
            return np.concatenate([[not now.any()], now])
        idle = self.encoder.idle_guard and not self.used.any() and bool(fits.any())
        if self.encoder.every_action and not idle:  # an idle cluster offers fitting jobs only:
            # an invalid slot acts as ∅, and an event-driven run has no next step to retry at
            return np.concatenate([[True], np.ones_like(fits)])
        return np.concatenate([[not idle], fits])

    def reserve_job(self, job: int) -> bool:
        """Reserve ``job`` at its first fit from now; False if it fits nowhere in the horizon."""
        length, demand = _profile(self.pending[job])
        fits, first = fit_table(
            self.used[None], np.array([[length]]), demand[None, None], self.shape.res_slots
        )
        if not fits[0, 0]:
            self.encoder._admit(job)
            return False
        off = int(first[0, 0])
        self.used[off : off + length] += demand
        self.encoder.reserved[job] = self.now + off
        self._fits = None
        return True

    def action_label(self, action: int) -> str:
        """What ``action`` does, in words (the report's decision view)."""
        if action == 0:
            return "void: end this step"
        job = self.encoder.slots[action - 1]
        return f"slot {action}: job {job}" if job is not None else f"slot {action}: empty"

    def apply(self, action: int) -> bool:
        fits, _ = self._fit()
        if action == 0 or not fits[action - 1]:
            return True
        job = self.encoder.slots[action - 1]
        assert job is not None
        self.encoder.slots[action - 1] = None
        self.reserve_job(job)
        self.encoder._refill()
        return False

    def decision(self) -> Decision:
        decision = Decision()
        for job, step in self.encoder.reserved.items():
            if step <= self.now:
                decision.set(job, self.pending[job].spec.num_workers, 0)
        return decision


class DeepRMScheduler(PolicyScheduler):
    """DeepRM policies behind the scheduler protocol.

    Args:
        policies: ``(training load, network, sample_seed or None for arg-max)``; with several,
            each decision uses the one whose load is nearest the offered load seen so far.
        shape: state sizes.
        name: registry name.
    """

    def __init__(
        self,
        policies: list[tuple[float, DeepRMPolicyNet, int | None]],
        shape: DeepRMShape | None = None,
        name: str = "deeprm",
        trained_setting: dict[str, Any] | None = None,
    ) -> None:
        if not policies:
            raise ValueError("deeprm: no policy to run")
        self.policies = sorted(policies, key=lambda p: p[0])
        self.deeprm_encoder = DeepRMEncoder(shape or DeepRMShape())
        _, net, seed = self.policies[0]
        super().__init__(name, self.deeprm_encoder, net, preemptive=False, sample_seed=seed)
        self.trained_setting = trained_setting or None

    def reset(self) -> None:
        """New run: forget slots and reservations, reseed sampling."""
        if hasattr(self, "deeprm_encoder"):
            self.deeprm_encoder.reset()
        super().reset()

    def decide(self, view: ClusterView) -> Decision:
        if len(self.policies) > 1:
            load = self.deeprm_encoder.load_estimate(round(view.now_s / STEP_S))
            _, net, _ = min(self.policies, key=lambda p: abs(p[0] - load))
            self.net = net
        return super().decide(view)


def load_policy(path: str | Path) -> tuple[float, DeepRMPolicyNet, int | None, PolicyCard]:
    """Load a DeepRM checkpoint: (training load, network, sample seed or None, card)."""
    card = read_card(path)
    check_card(card, algorithm="deeprm", where=f"checkpoint {path}")
    shape = DeepRMShape.from_shapes(card.shapes)
    state, card = load_checkpoint(path, algorithm="deeprm", shapes=shape.shapes())
    hidden = tuple(int(h) for h in card.hyperparams.get("hidden", [20]))
    net = DeepRMPolicyNet(shape, hidden)
    try:
        net.load_state_dict(state)
    except RuntimeError as exc:  # a card whose sizes do not match its weights
        first = str(exc).splitlines()[0]
        raise ValueError(f"checkpoint {path}: weights do not fit the network ({first})") from None
    mode = card.hyperparams.get("action_selection", "sample")
    load = float(card.workload_params.get("load", 0.7))
    return load, net, (0 if mode == "sample" else None), card


def make_deeprm_scheduler(arg: str | None) -> DeepRMScheduler:
    """``deeprm`` (`DEFAULT_POLICY`), ``deeprm:paper`` (`PAPER_POLICY`, DeepRM's own method),
    ``deeprm:LOAD`` (the paper-state policy trained nearest ``LOAD``) or ``deeprm:PATH``."""
    torch.set_num_threads(1)
    path = policy_path(arg)
    load, net, seed, card = load_policy(path)
    scheduler = DeepRMScheduler(
        [(load, net, seed)], _shape_of(card), trained_setting=card.trained_setting
    )
    # deployed as trained: a policy trained with every action offered gets every action
    scheduler.deeprm_encoder.every_action = card.hyperparams.get("mask_invalid") is False
    return scheduler


def _shape_of(card: PolicyCard) -> DeepRMShape:
    return DeepRMShape.from_shapes(card.shapes)
