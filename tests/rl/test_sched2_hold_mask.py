"""``train sched2 --paper --hold-mask local``: φ (hold) is illegal exactly while a window job
fits at its best locality under packing, the same in the batched and the scalar environment
and in the scheduler a checkpoint builds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dlsched.papers.sched2.batched_env import BatchedSched2Env
from dlsched.papers.sched2.env import Sched2Env

SMALL = {"num_jobs": 60, "load": 1.8, "servers": 3}


def packing_servers(free: list[int], gpus: int) -> int:
    """Servers packing (SCED² Fig. 2) spreads ``gpus`` over, step by step: the best-fitting
    server that holds the rest whole, else the emptiest one (an oracle independent of
    `hold_blocked`'s sorted sums)."""
    room, left, used = list(free), gpus, 0
    while left > 0:
        whole = [i for i, r in enumerate(room) if r >= left]
        server = min(whole, key=lambda i: room[i]) if whole else int(np.argmax(room))
        take = min(left, room[server])
        room[server] -= take
        left -= take
        used += 1
    return used


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_hold_is_masked_exactly_where_a_window_job_fits_at_best_locality(backend: str) -> None:
    env = BatchedSched2Env(3, backend=backend, hold_mask="local", **SMALL)
    env.reset([3, 4, 5])
    rng = np.random.default_rng(0)
    m, j = env.shape.gpus_per_server, env.shape.slots
    blocked = ended = 0
    while ended < 3:
        masks = env.ops.numpy(env.action_masks())
        env.hold_mask = "none"
        plain = env.ops.numpy(env.action_masks())
        env.hold_mask = "local"
        win, free = env.ops.numpy(env.window()), env.ops.numpy(env.free)
        gpus = env.ops.numpy(env.gpus)
        for b in range(3):
            assert np.array_equal(masks[b, :j], plain[b, :j])  # picks are untouched
            local = [
                packing_servers(free[b].tolist(), int(gpus[b, win[b, s]]))
                == -(-int(gpus[b, win[b, s]]) // m)
                for s in range(j)
                if plain[b, s]
            ]
            assert masks[b, j] == (plain[b, j] and not any(local))
            blocked += int(plain[b, j] and not masks[b, j])
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
        *_, info = env.step(actions)
        ended += len(info["episodes"])
    assert blocked > 20  # the mask did remove holds, so the check above was not vacuous


def test_scalar_env_masks_hold_as_the_batched_one() -> None:
    seeds = [7, 8]
    scalars = [Sched2Env(hold_mask="local", **SMALL) for _ in seeds]
    batched = BatchedSched2Env(len(seeds), hold_mask="local", **SMALL)
    _, masks_b = batched.reset(seeds)
    infos = [env.reset(options={"trace_seed": s})[1] for env, s in zip(scalars, seeds, strict=True)]
    rng = np.random.default_rng(1)
    done, steps = [False] * len(seeds), 0
    while not all(done):
        actions = []
        for i, info in enumerate(infos):
            if not done[i]:
                np.testing.assert_array_equal(masks_b[i], info["action_mask"])
            actions.append(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        _, _, _, masks_b, _ = batched.step(np.array(actions))
        for i, env in enumerate(scalars):
            if not done[i]:
                _, _, terminated, _, infos[i] = env.step(actions[i])
                done[i] = terminated
        steps += 1
    assert steps > 40  # both episodes ran to their ends with equal masks


def test_unknown_hold_mask_is_refused_with_one_line() -> None:
    with pytest.raises(ValueError, match="hold_mask must be one of"):
        BatchedSched2Env(1, hold_mask="always", **SMALL)
    with pytest.raises(ValueError, match="hold_mask must be one of"):
        Sched2Env(hold_mask="always", **SMALL)


def test_the_scheduler_of_a_masked_network_is_what_the_batched_evaluation_reports() -> None:
    from dlsched.api import simulate
    from dlsched.papers.sched2.paper import evaluate_batched
    from dlsched.papers.sched2.policy import PAPER_POLICY_DIR, load_policy, make_scheduler_from
    from dlsched.workloads.registry import make_workload

    net, shape, _ = load_policy(PAPER_POLICY_DIR)
    runs = {}
    for mask in ("none", "local"):
        batched = evaluate_batched(net, (6,), num_jobs=60, load=1.8, hold_mask=mask)
        scheduler = make_scheduler_from(net, shape, hold_mask=mask)
        result = simulate(make_workload("sched2", seed=6, num_jobs=60, load=1.8), scheduler)
        runs[mask] = result.summary()["avg_jct_s"]
        assert batched["avg_jct_s"] == pytest.approx(runs[mask], rel=1e-9)
    assert runs["local"] != runs["none"]


def test_a_masked_run_says_so_on_its_card_and_its_scheduler_keeps_the_mask(tmp_path: Path) -> None:
    from dlsched.papers.sched2.paper import PaperConfig, train_paper
    from dlsched.papers.sched2.policy import load_scheduler

    config = PaperConfig(
        episodes=2, num_envs=2, num_jobs=40, learning_starts=64, batch_size=16, eval_every=2,
        eps_decay_episodes=2, time_budget_s=120.0, device="cpu", hold_mask="local",
    )  # fmt: skip
    out = train_paper(config, tmp_path / "p").out
    scheduler, card = load_scheduler(out)
    assert card.hyperparams["hold_mask"] == "local"
    assert card.notes.startswith("NOT the paper's method") and "--hold-mask local" in card.notes
    assert scheduler.encoder.hold_mask == "local"  # type: ignore[attr-defined]
    assert load_scheduler("paper")[0].encoder.hold_mask == "none"  # type: ignore[attr-defined]
