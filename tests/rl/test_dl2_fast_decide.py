"""DL2's greedy fast path (`NumpyPolicy.act_after` in `PolicyScheduler`'s incremental loop,
over `Dl2Slot`'s compiled per-action kernels).

The regrouped network must give the torch network's logits (allclose) on random observations
and along real slots, and the incremental loop must decide as a straightforward loop does (the
full float64 torch network, legality found by applying each action to a copy of the slot),
except where two legal actions' float64 logits tie.
"""

from __future__ import annotations

import contextlib
import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.api import simulate
from dlsched.core import ClusterView, Decision
from dlsched.core.cluster import tasks_that_fit
from dlsched.papers.dl2.network import (
    Dl2Config,
    NumpyPolicy,
    RowNet,
    load,
    make_policy,
    make_scheduler_for,
)
from dlsched.papers.dl2.scheduler import SHIPPED
from dlsched.papers.dl2.state import ADD_PS, ADD_WORKER, Dl2Slot
from dlsched.rl.policy_scheduler import PolicyScheduler
from dlsched.rl.sim_driver import SimDriver
from dlsched.schedulers.base import BaseScheduler
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim import SimulationStalled
from dlsched.workloads.registry import make_workload

torch.set_num_threads(1)

TIE = 1e-4
"""Float64 logit gap below which two actions count as tied (float32 rounding is ~1e-5)."""


def _torch_logits(policy: torch.nn.Module, obs: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return policy(torch.from_numpy(obs.astype(np.float64))[None])[0].numpy()


def _random_obs(cfg: Dl2Config, rng: np.random.Generator, present: int) -> np.ndarray:
    shape = cfg.shape()
    obs = rng.uniform(0.0, 2.0, shape.obs_dim).astype(np.float32)
    rows = obs[: cfg.J * shape.row_dim].reshape(cfg.J, shape.row_dim)
    rows[:, shape.L] = np.arange(cfg.J) < present
    return obs


@pytest.mark.parametrize(("hidden", "J"), [((16, 16), 6), ((32,), 3), ((8, 8, 8), 5)])
def test_logits_match_torch_on_random_states(hidden: tuple[int, ...], J: int) -> None:
    torch.manual_seed(J)
    cfg = Dl2Config(J=J, hidden=hidden)
    policy = make_policy(cfg).eval()
    fast = NumpyPolicy(policy)
    ref = copy.deepcopy(policy).double()
    rng = np.random.default_rng(0)
    shape = cfg.shape()
    for present in range(J + 1):
        obs = _random_obs(cfg, rng, present)
        np.testing.assert_allclose(fast.logits(obs), _torch_logits(ref, obs), rtol=1e-5, atol=1e-5)
        fast.logits_after(obs, None)
        for _ in range(20):  # one row and the global entries change, presence stays
            row = int(rng.integers(J))
            start = row * shape.row_dim
            keep = obs[start + shape.L]
            obs[start : start + shape.row_dim] = rng.uniform(0.0, 2.0, shape.row_dim)
            obs[start + shape.L] = keep
            obs[-4:] = rng.uniform(0.0, 1.0, 4)
            got = fast.logits_after(obs, row)
            np.testing.assert_allclose(got, _torch_logits(ref, obs), rtol=1e-5, atol=1e-5)


def test_a_wrong_row_hint_gives_wrong_logits() -> None:
    """The incremental path really reuses rows: lying about the changed row is caught."""
    torch.manual_seed(1)
    cfg = Dl2Config(J=4, hidden=(16, 16))
    policy = make_policy(cfg).eval()
    fast = NumpyPolicy(policy)
    rng = np.random.default_rng(1)
    obs = _random_obs(cfg, rng, 4)
    fast.logits_after(obs, None)
    obs[: cfg.shape().row_dim] += 1.0  # row 0 changes ...
    got = fast.logits_after(obs, 1)  # ... but row 1 is named
    assert not np.allclose(
        got, _torch_logits(copy.deepcopy(policy).double(), obs), rtol=1e-5, atol=1e-5
    )


@pytest.mark.slow
def test_shipped_weights_match_torch_along_real_slots() -> None:
    policy, cfg = load(SHIPPED)
    assert isinstance(policy, RowNet)
    fast = NumpyPolicy(policy)
    ref = copy.deepcopy(policy).double()
    checked = {"steps": 0}

    class _Probe(BaseScheduler):
        preemptive = True
        name = "probe"

        def decide(self, view: ClusterView) -> Decision:
            slot = Dl2Slot(view, cfg.shape())
            rng = np.random.default_rng(checked["steps"])
            part: int | None = None
            while True:
                obs = slot.observation_view()
                got = fast.logits_after(obs, part)
                np.testing.assert_allclose(got, _torch_logits(ref, obs), rtol=1e-5, atol=1e-4)
                checked["steps"] += 1
                if slot.apply(int(rng.choice(np.flatnonzero(slot.mask_view())))):
                    return slot.decision()
                part = slot.changed_part

    with contextlib.suppress(SimulationStalled):  # random actions may leave jobs idle for good
        simulate("dl2", _Probe(), seed=5, num_jobs=60, load=3.0)
    assert checked["steps"] > 200


class _SideBySide(BaseScheduler):
    """Walks each view with the fast path and checks every action against float64 torch.

    Where the two pick different actions, the float64 logits of the two must tie (gap <
    `TIE`); the fast path's action is then followed. The fast path's decision must equal what
    the deployed scheduler decides on the same view.
    """

    preemptive = True
    name = "side-by-side"

    def __init__(self, policy: torch.nn.Module, cfg: Dl2Config, driver: str | None) -> None:
        self.deployed = make_scheduler_for(policy, cfg)
        self.fast = NumpyPolicy(policy)
        self.ref = copy.deepcopy(policy).double()
        self.cfg = cfg
        self.driver = make_scheduler(driver) if driver is not None else None
        self.actions = 0
        self.ties = 0

    def decide(self, view: ClusterView) -> Decision:
        slot = Dl2Slot(view, self.cfg.shape())
        part: int | None = None
        while True:
            mask = slot.mask_view()
            action = self.fast.act_after(slot.observation_view(), mask, part)
            exact = np.where(mask, _torch_logits(self.ref, slot.observation_view()), -np.inf)
            if action != int(exact.argmax()):
                assert exact.max() - exact[action] < TIE
                self.ties += 1
            self.actions += 1
            if slot.apply(action):
                break
            part = slot.changed_part
        got = slot.decision()
        assert _targets(self.deployed.decide(view)) == _targets(got)
        return got if self.driver is None else self.driver.decide(view)


def _targets(decision: Decision) -> list[tuple[int, int, int]]:
    return [(j, t.num_workers, t.num_ps) for j, t in decision.targets.items()]


def test_shipped_policy_decides_as_float64_torch() -> None:
    policy, cfg = load(SHIPPED)
    pair = _SideBySide(policy, cfg, driver=None)
    simulate("dl2", pair, seed=7, load=3.0, num_jobs=80)  # type: ignore[arg-type]
    assert pair.actions > 300


@pytest.mark.parametrize("J", [2, 5])
def test_small_row_counts_and_several_batches_decide_as_torch(J: int) -> None:
    torch.manual_seed(J)
    cfg = Dl2Config(J=J, hidden=(16, 16))
    policy = make_policy(cfg).eval()
    pair = _SideBySide(policy, cfg, driver="drf")  # DRF drives: an untrained policy could stall
    simulate("dl2", pair, seed=3, num_jobs=30)  # type: ignore[arg-type]
    assert pair.actions > 20


def test_the_deployed_scheduler_takes_the_incremental_path() -> None:
    policy, cfg = load(SHIPPED)
    scheduler = make_scheduler_for(policy, cfg)
    assert isinstance(scheduler, PolicyScheduler)
    calls = {"after": 0}
    net = scheduler.net
    assert isinstance(net, NumpyPolicy)
    inner = net.act_after

    def counted(obs: np.ndarray, mask: np.ndarray, part: int | None) -> int:
        calls["after"] += 1
        return inner(obs, mask, part)

    net.act_after = counted  # type: ignore[method-assign]
    simulate("dl2", scheduler, seed=7, num_jobs=20)
    assert calls["after"] > 20


def test_masks_kept_incrementally_are_the_actions_that_apply() -> None:
    """Every row action the in-place mask allows applies on a copy of the slot, and every one it
    masks is at a cap or does not fit (the mask is patched per action, not rebuilt)."""
    checked = {"actions": 0}

    class _Probe(BaseScheduler):
        preemptive = True
        name = "probe"

        def decide(self, view: ClusterView) -> Decision:
            slot = Dl2Slot(view, Dl2Config(J=4).shape())
            rng = np.random.default_rng(checked["actions"])
            while True:
                mask = slot.mask_view().copy()
                for action in range(3 * len(slot.rows)):
                    trial = copy.deepcopy(slot)
                    try:
                        trial.apply(action)
                        applies = True
                    except ValueError:
                        applies = False
                    assert applies == bool(mask[action]), action
                    checked["actions"] += 1
                rows = np.flatnonzero(mask[:-1])  # fill rows up to their caps: void last
                if slot.apply(int(rng.choice(rows)) if rows.size else len(mask) - 1):
                    return slot.decision()

    with contextlib.suppress(SimulationStalled):
        simulate("dl2", _Probe(), seed=2, num_jobs=4, load=3.0, servers=8)
    assert checked["actions"] > 500


def _reference_mask(slot: Dl2Slot) -> np.ndarray:
    """Legal actions found the straightforward way: a row action is legal when it applies to a
    copy of the slot; void, unless it would end the slot with no job able to train while a row
    action is legal."""
    mask = np.zeros(3 * slot.shape.J + 1, dtype=bool)
    if slot.done:
        return mask
    for action in range(3 * len(slot.rows)):
        with contextlib.suppress(ValueError):
            copy.deepcopy(slot).apply(action)
            mask[action] = True
    last = slot.batch + 1 >= slot.num_batches
    mask[-1] = not (last and not slot.decision().targets and mask[:-1].any())
    return mask


def _reference_rows(slot: Dl2Slot) -> np.ndarray:
    """Each present row's (r, w, u) entries computed from its counts, float32."""
    cap = slot.capacity
    out = []
    for run, (w, p) in zip(slot.rows, slot.row_counts(), strict=True):
        used = np.array(run.spec.worker_demand.as_tuple()) * w
        used = used + np.array(run.spec.ps_demand.as_tuple()) * p
        share = max((u / c for u, c in zip(used, cap, strict=True) if c > 0), default=0.0)
        out.append((min(10.0, 10.0 * share), w / 16.0, p / 16.0))
    return np.array(out, dtype=np.float32).reshape(-1, 3)


def _reference_place(free: list[list[float]], need: tuple[float, float, float]) -> None:
    """One task where most tasks of ``need`` fit (lowest server id on ties)."""
    if not any(x > 0 for x in need):
        return
    fits = [tasks_that_fit(row, need) for row in free]
    server = fits.index(max(fits))
    assert fits[server] >= 1
    free[server] = [free[server][r] + -1.0 * need[r] for r in range(3)]


@settings(max_examples=16, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    servers=st.sampled_from([2, 5, 13]),
    J=st.sampled_from([2, 5, 40]),
    load=st.sampled_from([1.0, 3.0]),
    skip=st.integers(0, 4),
    randoms=st.integers(0, 12),
)
def test_fast_path_acts_as_the_straightforward_path_on_random_states(
    seed: int, servers: int, J: int, load: float, skip: int, randoms: int
) -> None:
    """Random states (a random scheduling point, then ``randoms`` random legal actions before
    the fast path's own): at every step the in-place mask, the acted rows' entries and the
    scratch free resources equal the straightforward ones, and from the random state on, the
    fast path's action is the float64 torch arg-max over the reference mask, except at a tie."""
    rng = np.random.default_rng(seed)
    if J == 40:
        policy, cfg = load_policy_cached()
    else:
        torch.manual_seed(seed)
        cfg = Dl2Config(J=J, hidden=(16, 16))
        policy = make_policy(cfg).eval()
    fast = NumpyPolicy(policy)
    ref = copy.deepcopy(policy).double()
    driver = SimDriver(
        make_workload("dl2", seed=seed, servers=servers, num_jobs=3 * J + 5, load=load), seed=seed
    )
    drf = make_scheduler("drf")
    for k in range(skip + 1):  # DRF drives to a random scheduling point
        if driver.next_point() is None:
            return
        if k < skip:
            driver.apply(drf.decide(driver.view()))
    slot = Dl2Slot(driver.view(), cfg.shape())
    free = slot.free.tolist()
    part: int | None = None
    for step in range(randoms + 60):
        mask = _reference_mask(slot)
        assert np.array_equal(slot.mask_view(), mask)
        rows = slot.observation_view()[: J * cfg.shape().row_dim].reshape(J, -1)
        L = cfg.shape().L
        np.testing.assert_array_equal(rows[: len(slot.rows), L + 4 : L + 7], _reference_rows(slot))
        assert slot.free.tolist() == free
        action = fast.act_after(slot.observation_view(), slot.mask_view(), part)
        if step < randoms:  # a random state first
            action = int(rng.choice(np.flatnonzero(mask)))
            part = None  # the fast path saw other states: it recomputes every row
        else:
            exact = np.where(mask, _torch_logits(ref, slot.observation()), -np.inf)
            if action != int(exact.argmax()):
                assert exact.max() - exact[action] < TIE
        if action < 3 * J:
            spec = slot.rows[action // 3].spec
            if action % 3 != ADD_PS:
                _reference_place(free, spec.worker_demand.as_tuple())
            if action % 3 != ADD_WORKER:
                _reference_place(free, spec.ps_demand.as_tuple())
        if slot.apply(action):
            return
        if step >= randoms:
            part = slot.changed_part


_SHIPPED: list[tuple[torch.nn.Module, Dl2Config]] = []


def load_policy_cached() -> tuple[torch.nn.Module, Dl2Config]:
    if not _SHIPPED:
        _SHIPPED.append(load(SHIPPED))
    return _SHIPPED[0]
