"""Does SCED²'s reward, at a given discount, prefer the holds that make a window policy good?

The rule ``window-shortest-hold`` (`sched2_paper.window_hold`: the shortest window job that
packing places at its best locality, else φ) reaches about 0.74× DSIF's average JCT inside the
DQN's own action space. This script measures, exactly, what the DQN's targets would tell it
about that rule's choices: on one trace it samples states where the rule holds (φ while a
window job fits) and states where it picks while φ is legal, and from each such state runs
every first action (J + 1 copies of the episode) followed by the rule to the end. The
environment and the rule are deterministic, so each copy's discounted return is Q^rule(s, a)
exactly, for the paper's reward (each picked job's effectiveness) and for the incremental one
(`BatchedSched2Env.effectiveness_potential`'s change), at several discounts per action.

Prints, per reward and γ, the share of states where the rule's action has the highest Q (its
hold beats every pick; its pick beats φ and every other pick) and the median margin, in units
of effectiveness (unscaled).

    PYTHONPATH=src python benchmarks/sched2_hold_advantage.py --seed 90001 --holds 16 --picks 8
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sched2_paper import LOAD, window_hold

from dlsched.papers.sched2.batched_env import BatchedSched2Env

GAMMAS = (0.9, 0.99, 0.999, 1.0)


def rule_trajectory(
    seed: int, jobs: int
) -> tuple[list[int], list[int], list[int], dict[str, float]]:
    """The rule's actions on one trace, the steps where it holds while a job fits, those where
    it picks while φ is legal, and its episode metrics."""
    rule = window_hold(shortest=True)
    env = BatchedSched2Env(1, num_jobs=jobs, load=LOAD)
    obs, masks = env.reset([seed])
    actions: list[int] = []
    holds: list[int] = []
    picks: list[int] = []
    j = env.shape.slots
    while True:
        a = int(rule(env, obs, masks)[0])
        if a == j and masks[0, :j].any():
            holds.append(len(actions))
        elif a < j and masks[0, j]:
            picks.append(len(actions))
        actions.append(a)
        obs, _, _, masks, info = env.step(np.array([a]))
        if info["episodes"]:
            return actions, holds, picks, info["episodes"][0][1]


def rollout_returns(
    seed: int, jobs: int, actions: list[int], points: list[int]
) -> tuple[np.ndarray, ...]:
    """For each point and first action: discounted returns (points, J+1, γ) of the paper's and
    the incremental reward, and whether that first action was legal."""
    rule = window_hold(shortest=True)
    num_actions = 11
    starts = np.repeat(points, num_actions)
    first = np.tile(np.arange(num_actions), len(points))
    b = len(starts)
    env = BatchedSched2Env(b, num_jobs=jobs, load=LOAD)
    obs, masks = env.reset([seed] * b)
    gammas = np.array(GAMMAS)[None, :]
    paper, inc, disc = np.zeros((b, len(GAMMAS))), np.zeros((b, len(GAMMAS))), np.ones((b, 1))
    disc = disc * np.ones_like(gammas)
    legal = np.zeros(b, dtype=bool)
    done = np.zeros(b, dtype=bool)
    recorded = np.array(actions)
    potential = env.effectiveness_potential().copy()
    step = 0
    while not done.all():
        replay = recorded[min(step, len(recorded) - 1)]
        a = np.where(step < starts, replay, np.where(step == starts, first, rule(env, obs, masks)))
        now = step == starts
        legal[now] = masks[now, first[now]]
        obs, rewards, _, masks, info = env.step(a)
        after = env.effectiveness_potential().copy()
        live = ((step >= starts) & ~done)[:, None]
        paper += np.where(live, disc * rewards[:, None], 0.0)
        inc += np.where(live, disc * (after - potential)[:, None], 0.0)
        disc = np.where(live, disc * gammas, disc)
        potential = after
        for i, _ in info["episodes"]:
            done[i] = True
        step += 1
    shape = (len(points), num_actions, len(GAMMAS))
    return paper.reshape(shape), inc.reshape(shape), legal.reshape(shape[:2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=90_001, help="trace (not a test seed)")
    parser.add_argument("--jobs", type=int, default=1000, help="jobs per trace")
    parser.add_argument("--holds", type=int, default=16, help="states where the rule holds")
    parser.add_argument("--picks", type=int, default=8, help="states where it picks")
    args = parser.parse_args()
    t0 = time.perf_counter()
    actions, holds, picks, metrics = rule_trajectory(args.seed, args.jobs)
    print(f"window-shortest-hold on trace {args.seed}: avg JCT {metrics['avg_jct_s']:,.0f} s, "
          f"effectiveness {metrics['avg_effectiveness']:.3f}, {len(actions)} actions, "
          f"{len(holds)} holds while a job fits")  # fmt: skip
    rng = np.random.default_rng(0)
    hold_pts = sorted(rng.choice(holds, size=min(args.holds, len(holds)), replace=False))
    pick_pts = sorted(rng.choice(picks, size=min(args.picks, len(picks)), replace=False))
    points = [int(p) for p in hold_pts + pick_pts]
    paper, inc, legal = rollout_returns(args.seed, args.jobs, actions, points)
    for name, q in (("paper (E_j at pick)", paper), ("incremental", inc)):
        for g, gamma in enumerate(GAMMAS):
            margins: dict[str, list[float]] = {"hold": [], "pick": []}
            for k, t in enumerate(points):
                values = np.where(legal[k], q[k, :, g], -np.inf)
                chosen = actions[t]
                margin = values[chosen] - np.delete(values, chosen).max()
                margins["hold" if chosen == 10 else "pick"].append(float(margin))
            cells = [
                f"rule's {kind} best in {np.mean(np.array(m) > 0):.2f} of {len(m)} "
                f"(median margin {np.median(m):+.3f})"
                for kind, m in margins.items()
            ]
            print(f"{name:<20} γ {gamma:<5}: " + "; ".join(cells))
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
