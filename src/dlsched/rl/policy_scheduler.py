"""`PolicyScheduler`: a trained policy network behind the ordinary `Scheduler` protocol.

DL2, DeepRM and SCED² all decide a scheduling point by a *sequence* of small actions — add a
worker/PS to a job, put a job in a slot, pick the next job — each chosen from the state updated
by the previous ones, until a "void" action (or no legal action) ends the round. This module
holds that loop once (`SlotLoopScheduler`; `PolicyScheduler` runs a network in it,
`dlsched.rl.adapter.PolicyAdapter` any library's policy); each algorithm supplies only:

* a `SlotEncoder`: ``start(view)`` returns a `SlotBuilder` for that scheduling point;
* a `SlotBuilder`: ``observation()`` (float32 vector, the network's input),
  ``action_mask()`` (bool vector, True = legal), ``apply(action)`` (returns True when the round
  is over) and ``decision()`` (the `Decision` built so far);
* a network: ``torch.nn.Module`` mapping a ``(1, obs_dim)`` float tensor to ``(1, n_actions)``
  logits (or Q-values: the loop takes the arg-max either way), or any `ArrayPolicy` (an object
  with ``logits(obs) -> ndarray``, e.g. a NumPy copy of the network, much faster at batch 1).

The same builder serves the Gymnasium environment during training, so the scheduler and the
environment cannot disagree on what the policy sees. Networks run under
`torch.inference_mode`; illegal actions are masked to ``-inf`` before the arg-max (or sampling).

Greedy decisions take a faster path when both sides allow it: an `IncrementalBuilder` exposes
its observation and mask in place and says which part (row) its last action changed, and an
`IncrementalPolicy` recomputes only that part (DL2: one job row per action) and picks the
legal arg-max itself (DL2: one compiled call an action).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import torch

from dlsched.core import ClusterView, Decision, JobSpec, Resources
from dlsched.rl.blas_threads import one_blas_thread
from dlsched.rl.decision_trace import DecisionTrace
from dlsched.schedulers.base import BaseScheduler, cannot_run

log = logging.getLogger(__name__)


class SlotBuilder(Protocol):
    """The state of one scheduling point while a policy builds its decision action by action."""

    def observation(self) -> npt.NDArray[np.float32]:
        """The network's input now (flat float32 vector)."""
        ...

    def action_mask(self) -> npt.NDArray[np.bool_]:
        """Legal actions now (True = legal); at least one is legal until the round ends."""
        ...

    def apply(self, action: int) -> bool:
        """Take a legal action; return True if the round is over (void action or nothing left)."""
        ...

    def decision(self) -> Decision:
        """The decision built so far."""
        ...


class ArrayPolicy(Protocol):
    """A policy evaluated on NumPy arrays: one observation in, one score per action out."""

    def logits(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.floating[Any]]: ...


@runtime_checkable
class IncrementalPolicy(Protocol):
    """An `ArrayPolicy` that can reuse its previous call's work when one part of the input
    changed, and pick the greedy action itself."""

    def logits(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.floating[Any]]: ...

    def act_after(
        self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_], part: int | None
    ) -> int:
        """The legal arg-max of the scores for ``obs`` (the first on ties; -1 when ``mask``
        has no legal action), when only ``part`` changed since the previous call (None:
        anything may have)."""
        ...


@runtime_checkable
class IncrementalBuilder(Protocol):
    """A `SlotBuilder` that exposes its arrays in place and what its last action changed."""

    changed_part: int | None
    """The one part (row) of the observation the last `apply` changed besides global entries,
    or None when more changed (a new batch) or nothing was applied yet."""

    def observation_view(self) -> npt.NDArray[np.float32]:
        """`observation` without a copy (valid until the next `apply`; read only)."""
        ...

    def mask_view(self) -> npt.NDArray[np.bool_]:
        """`action_mask` without a copy (valid until the next `apply`; read only)."""
        ...

    def apply(self, action: int) -> bool: ...

    def decision(self) -> Decision: ...


class SlotEncoder(Protocol):
    """Starts a `SlotBuilder` for a scheduling point."""

    def start(self, view: ClusterView) -> SlotBuilder:
        """A fresh builder for ``view`` (no action taken yet)."""
        ...


def masked_choice(
    logits: torch.Tensor,
    mask: npt.NDArray[np.bool_],
    generator: torch.Generator | None = None,
) -> int:
    """Arg-max (``generator`` None) or a sample of the softmax over legal actions only.

    Args:
        logits: ``(n_actions,)`` scores.
        mask: ``(n_actions,)`` legal actions; at least one must be True.
        generator: seeded torch generator for sampling, or None for the greedy choice.
    """
    if not mask.any():
        raise ValueError("no legal action: the builder should have ended the round")
    legal = torch.from_numpy(np.ascontiguousarray(mask))
    scores = logits.masked_fill(~legal, float("-inf"))
    if generator is None:
        return int(torch.argmax(scores).item())
    probs = torch.softmax(scores, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator).item())


class SlotLoopScheduler(BaseScheduler):
    """The loop every learned scheduler shares: start ``encoder``'s builder, then ask `choose`
    for an action and apply it until the round ends (subclasses supply `choose`).

    Args:
        name: registry name (``"dl2"``).
        encoder: turns a view into a `SlotBuilder`.
        preemptive: whether decisions are the whole desired state (elastic, DL2) or only start
            pending jobs (DeepRM, SCED²).
        max_actions: safety cap on actions per scheduling point (the builder should end first).
    """

    is_oracle: ClassVar[bool] = False

    def __init__(
        self, name: str, encoder: SlotEncoder, *, preemptive: bool, max_actions: int = 100_000
    ) -> None:
        self.name = name
        self.encoder = encoder
        self.preemptive = preemptive  # type: ignore[misc]  # per instance, read by the engine
        self.max_actions = max_actions
        self.trace: DecisionTrace | None = None
        """Set to record the decision points (`dlsched.rl.decision_trace`); None: not."""

    def cannot_run(self, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
        """The encoder's reason (its ``cannot_run``, where it has one): what its fixed state
        cannot show."""
        return cannot_run(self.encoder, jobs, servers)  # type: ignore[arg-type]

    def decide(self, view: ClusterView) -> Decision:
        if self.trace is not None:
            self.trace.begin(view)
        return self._loop(self.encoder.start(view))

    def _loop(self, builder: SlotBuilder) -> Decision:
        """Ask `choose` and apply until ``builder``'s round ends; its decision."""
        with torch.inference_mode():
            for _ in range(self.max_actions):
                mask = builder.action_mask()
                if not mask.any():
                    break
                obs = builder.observation()
                action = self.choose(obs, mask)
                if self.trace is not None:
                    self.trace.step(builder, self.scores(obs), mask, action)
                if builder.apply(action):
                    break
            else:
                log.warning(
                    "%s: stopped after %d actions in one round", self.name, self.max_actions
                )
        return builder.decision()

    def choose(
        self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]
    ) -> int:  # pragma: no cover - abstract
        """A legal action (``mask[action]`` True) for observation ``obs``."""
        raise NotImplementedError

    def scores(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.floating[Any]] | None:
        """Every action's score for ``obs`` (for `trace`; None: not known)."""
        return None


class PolicyScheduler(SlotLoopScheduler):
    """A scheduler that runs ``net`` over ``encoder``'s builder until the round ends.

    Args:
        name: registry name (``"dl2"``).
        encoder: turns a view into a `SlotBuilder`.
        net: logits (or Q-values) network, put in eval mode here; or an `ArrayPolicy`.
        preemptive: whether decisions are the whole desired state (elastic, DL2) or only start
            pending jobs (DeepRM, SCED²).
        max_actions: safety cap on actions per scheduling point (the builder should end first).
        sample_seed: None for greedy (arg-max) actions; an int to sample from the softmax with
            a torch generator seeded by it (reseeded on `reset`).

    Attributes:
        trained_setting: the card's ``trained_setting`` (workload and parameters the policy
            was trained for; `dlsched.rl.setting`), set by the loader; None: not said.
    """

    trained_setting: dict[str, Any] | None = None

    def __init__(
        self,
        name: str,
        encoder: SlotEncoder,
        net: torch.nn.Module | ArrayPolicy,
        *,
        preemptive: bool,
        max_actions: int = 100_000,
        sample_seed: int | None = None,
    ) -> None:
        super().__init__(name, encoder, preemptive=preemptive, max_actions=max_actions)
        self.net = net.eval() if isinstance(net, torch.nn.Module) else net
        self.sample_seed = sample_seed
        self._generator: torch.Generator | None = None
        # protocol isinstance checks cost tens of µs: once per (net type, builder type)
        self._incremental: dict[tuple[type, type], bool] = {}
        self.reset()

    def reset(self) -> None:
        """Reseed the sampling generator (no-op when greedy)."""
        if self.sample_seed is not None:
            self._generator = torch.Generator().manual_seed(self.sample_seed)

    def decide(self, view: ClusterView) -> Decision:
        if self.trace is not None:
            self.trace.begin(view)
        with one_blas_thread():  # a few dozen rows: threads only add waits (blas_threads)
            return self._decide(view)

    def _decide(self, view: ClusterView) -> Decision:
        builder = self.encoder.start(view)
        net = self.net
        if self._generator is None:
            kinds = (type(net), type(builder))
            incremental = self._incremental.get(kinds)
            if incremental is None:
                incremental = self._incremental[kinds] = isinstance(
                    net, IncrementalPolicy
                ) and isinstance(builder, IncrementalBuilder)
            if incremental:
                return self._greedy_incremental(builder, net)  # type: ignore[arg-type]
        return self._loop(builder)

    def _greedy_incremental(self, builder: IncrementalBuilder, net: IncrementalPolicy) -> Decision:
        """The greedy loop with in-place arrays and part-wise recomputation."""
        part: int | None = None
        act, apply, trace = net.act_after, builder.apply, self.trace
        for _ in range(self.max_actions):
            action = act(builder.observation_view(), builder.mask_view(), part)
            if trace is not None and action >= 0:  # the scores act computed, read after it
                trace.step(builder, getattr(net, "last_scores", None), builder.mask_view(), action)
            if action < 0 or apply(action):  # nothing legal, or the round is over
                break
            part = builder.changed_part
        else:
            log.warning("%s: stopped after %d actions in one round", self.name, self.max_actions)
        return builder.decision()

    def scores(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.floating[Any]]:
        """The network's scores of every action for ``obs`` (a second pass: same values)."""
        if isinstance(self.net, torch.nn.Module):
            with torch.inference_mode():
                return self.net(torch.from_numpy(obs).unsqueeze(0))[0].double().numpy()
        return np.asarray(self.net.logits(obs), dtype=np.float64)

    def choose(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]) -> int:
        """Arg-max of the network's scores over the legal actions, or a sample of their
        softmax when sampling."""
        if isinstance(self.net, torch.nn.Module):
            logits = self.net(torch.from_numpy(obs).unsqueeze(0))[0]
        else:
            scores = self.net.logits(obs)
            if self._generator is None:  # greedy without a torch round trip
                return int(np.argmax(np.where(mask, scores, -np.inf)))
            logits = torch.from_numpy(np.asarray(scores, dtype=np.float32))
        return masked_choice(logits, mask, self._generator)
