"""SCED²'s own method (``sched2:paper``) against the heuristics: issue 29's result targets.

Runs, on the same held-out test traces (`dlsched.papers.sched2.train.TEST_SEEDS`; ``sched2``
workload, 68 % one-GPU jobs, 15 × 8 GPUs, 1,000 jobs, load 1.8):

* the paper-method Q-network (``--policy``, repeatable, default the shipped
  ``policies/sched2_paper``), greedy, on `BatchedSched2Env` — per seed the same trajectory as
  ``dlsched simulate`` with ``sched2:paper`` (tests/rl/test_sched2_batched.py), all traces at
  once; a network trained with ``--hold-mask local`` (a deviation) acts under that mask; its
  row names every deviation its card records (incremental reward, hold mask, dueling head,
  semi-MDP discount, TD priority);
* four rules restricted to the paper's window (the first 10 waiting jobs in arrival order, the
  same packing placement), i.e. in the DQN's own action space: ``window-first`` (the first
  fitting slot) and ``window-shortest`` (the fitting slot with the shortest ideal time) never
  hold; ``window-first-hold`` and ``window-shortest-hold`` start only a job that packing
  places at its best locality and otherwise hold (φ) — what holds alone add;
* the shipped SCED²-L (``sched2``) and the non-oracle heuristics SIF, DSIF, SPF, LRF, FIFO and
  Tiresias through ``dlsched.simulate``.

Prints means with 95 % t-intervals over traces, the ratios the targets name (paired bootstrap
95 % intervals) and the verdicts: average JCT ≤ 0.85 × DSIF's and makespan ≤ 0.90 × the best
heuristic's (lowest mean makespan among the heuristics).

Usage::

    PYTHONPATH=src .venv/bin/python benchmarks/sched2_paper.py --traces 30
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from dlsched.api import simulate
from dlsched.papers.sched2.batched_env import BatchedSched2Env
from dlsched.papers.sched2.policy import PAPER_POLICY_DIR, load_policy
from dlsched.papers.sched2.train import TEST_SEEDS
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload

HEURISTICS = ("sif", "dsif", "spf", "lrf", "fifo", "tiresias")
METRICS = ("avg_jct_s", "makespan_s", "avg_effectiveness")
LOAD = 1.8
JCT_TARGET, MAKESPAN_TARGET = 0.85, 0.90


PAPER_ROW = "DQN, paper method (no deviation)"


def dqn_row(card: Any) -> str:
    """The DQN's row label: the paper's method, or the deviations its card records (the shipped
    ``sched2:paper`` was trained with ``--reward incremental``, one deviation)."""
    params = card.hyperparams
    deviations = ["incremental reward"] if params.get("reward", "paper") == "incremental" else []
    deviations += (
        [f"hold mask {params['hold_mask']}"] if params.get("hold_mask", "none") != "none" else []
    )
    deviations += ["dueling"] if params.get("dueling") else []
    deviations += [f"γ^(Δt/{params['discount_time_s']} s)"] if params.get("discount_time_s") else []
    deviations += ["TD priority"] if params.get("new_priority", "max") == "td" else []
    if not deviations:
        return PAPER_ROW
    return f"DQN + {' + '.join(deviations)} (deviation{'s' if len(deviations) > 1 else ''})"


def batched_rows(seeds: list[int], choose: Any, hold_mask: str = "none") -> list[dict[str, float]]:
    """Per-trace metrics of ``choose(env, obs, masks) -> actions`` on all traces at once."""
    env = BatchedSched2Env(len(seeds), num_jobs=1000, load=LOAD, hold_mask=hold_mask)
    obs, masks = env.reset(seeds)
    rows: dict[int, dict[str, float]] = {}
    while len(rows) < len(seeds):
        obs, _, _, masks, info = env.step(choose(env, obs, masks))
        rows.update(info["episodes"])
    return [rows[i] for i in range(len(seeds))]


def dqn_chooser(policy: Path) -> tuple[Any, str, str]:
    """The greedy network's chooser, the hold mask its card says it acts under and its row."""
    import torch

    net, _, card = load_policy(policy)
    net.eval()

    def choose(env: BatchedSched2Env, obs: Any, masks: Any) -> Any:
        with torch.no_grad():
            q = net(torch.as_tensor(obs)).masked_fill(~torch.as_tensor(masks), float("-inf"))
        return q.argmax(dim=1).numpy()

    return choose, str(card.hyperparams.get("hold_mask", "none")), dqn_row(card)


def window_rule(shortest: bool) -> Any:
    def choose(env: BatchedSched2Env, obs: Any, masks: Any) -> Any:
        j = env.shape.slots
        win = env.window()
        legal = masks[:, :j]
        if shortest:
            score = -env.ops.take(env.work, np.maximum(win, 0))
        else:
            score = -np.arange(j, dtype=np.float64)[None, :].repeat(len(win), 0)
        score = np.where(legal, score, -np.inf)
        return np.where(legal.any(axis=1), score.argmax(axis=1), j)

    return choose


def packing_spans(free: Any, demand: Any) -> Any:
    """``(B, J)`` servers the packing placement (SCED² Fig. 2) would use for each demand now,
    given ``(B, N)`` free GPUs (as `BatchedSched2Env._pick`, without starting anything)."""
    spans = np.zeros(demand.shape, dtype=np.int64)
    rows = np.arange(len(free))
    for slot in range(demand.shape[1]):
        room, left = free.copy(), demand[:, slot].copy()
        used = np.zeros(free.shape, dtype=bool)
        while (left > 0).any():
            whole = room >= left[:, None]
            best_fit = np.where(whole, room, 10**9).argmin(axis=1)
            server = np.where(whole.any(axis=1), best_fit, room.argmax(axis=1))
            take = np.minimum(left, room[rows, server])
            room[rows, server] -= take
            used[rows, server] |= take > 0
            left = left - take
        spans[:, slot] = used.sum(axis=1)
    return spans


def window_hold(shortest: bool) -> Any:
    """The first (or shortest) fitting window job that packing places at its best locality
    (fewest servers its GPUs need); φ (hold) when none does and φ is legal."""

    def choose(env: BatchedSched2Env, obs: Any, masks: Any) -> Any:
        j, m = env.shape.slots, env.shape.gpus_per_server
        win = env.window()
        legal = masks[:, :j]
        demand = np.where(legal, env.ops.take(env.gpus, np.maximum(win, 0)), 0)
        local = legal & (packing_spans(env.free, demand) == -(-demand // m))
        if shortest:
            score = -env.ops.take(env.work, np.maximum(win, 0))
        else:
            score = -np.arange(j, dtype=np.float64)[None, :].repeat(len(win), 0)
        best_local = np.where(local, score, -np.inf).argmax(axis=1)
        any_legal = np.where(legal, score, -np.inf).argmax(axis=1)
        return np.where(local.any(axis=1), best_local, np.where(masks[:, j], j, any_legal))

    return choose


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and 95 % t half-width."""
    a = np.asarray(values, dtype=np.float64)
    half = float(stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a)))
    return float(a.mean()), half


def ratio_interval(num: list[float], den: list[float], seed: int = 0) -> tuple[float, float, float]:
    """Ratio of means and its paired-bootstrap 95 % interval."""
    n, d = np.asarray(num), np.asarray(den)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(n), size=(5000, len(n)))
    boot = n[idx].mean(axis=1) / d[idx].mean(axis=1)
    return (
        float(n.mean() / d.mean()),
        float(np.quantile(boot, 0.025)),
        float(np.quantile(boot, 0.975)),
    )


def verdicts(results: dict[str, list[dict[str, float]]], dqn_names: list[str]) -> None:
    """Print each DQN row's ratios to the targets (paired bootstrap 95 % intervals) and, with
    several DQNs, the first one's ratios to each other."""
    best = min(HEURISTICS, key=lambda h: np.mean([r["makespan_s"] for r in results[h]]))

    def ratios(name: str, other: str) -> tuple[tuple[float, float, float], ...]:
        return tuple(
            ratio_interval([r[m] for r in results[name]], [r[m] for r in results[other]])
            for m in ("avg_jct_s", "makespan_s")
        )

    for name in dqn_names:
        jct, mk = ratios(name, "dsif")[0], ratios(name, best)[1]
        ok_j, ok_m = jct[0] <= JCT_TARGET, mk[0] <= MAKESPAN_TARGET
        print(
            f"{name}: avg JCT / DSIF = {jct[0]:.3f} [{jct[1]:.3f}, {jct[2]:.3f}] (target <= "
            f"{JCT_TARGET}): {'met' if ok_j else 'NOT met'}; makespan / best heuristic "
            f"({best}) = {mk[0]:.3f} [{mk[1]:.3f}, {mk[2]:.3f}] (target <= {MAKESPAN_TARGET}): "
            f"{'met' if ok_m else 'NOT met'}"
        )
    for other in dqn_names[1:]:
        jct, mk = ratios(dqn_names[0], other)
        print(
            f"{dqn_names[0]} / {other}: avg JCT {jct[0]:.3f} [{jct[1]:.3f}, {jct[2]:.3f}], "
            f"makespan {mk[0]:.3f} [{mk[1]:.3f}, {mk[2]:.3f}]"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=30, help="test traces (<= 30)")
    parser.add_argument(
        "--policy",
        type=Path,
        action="append",
        help="a DQN checkpoint (repeatable; default the shipped policies/sched2_paper); the "
        "first one's ratios to each other one are printed too",
    )
    parser.add_argument("--no-lookahead", action="store_true", help="skip SCED²-L")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument(
        "--reuse",
        type=Path,
        default=None,
        help="take every row but the DQNs' from an earlier --json of the same seeds (they are "
        "deterministic; saves ~15 min on a loaded 2-core box)",
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # a 2-core box shared by many processes
    seeds = list(TEST_SEEDS[: args.traces])
    results: dict[str, list[dict[str, float]]] = {}
    wall: dict[str, float] = {}
    dqn_names: list[str] = []
    for policy in args.policy or [PAPER_POLICY_DIR]:
        t0 = time.perf_counter()
        choose, hold_mask, row = dqn_chooser(policy)
        row = row if row not in results else f"{row} {policy.name}"
        results[row] = batched_rows(seeds, choose, hold_mask)
        wall[row] = time.perf_counter() - t0
        dqn_names.append(row)
    rules = {
        "window-first": window_rule(False),
        "window-shortest": window_rule(True),
        "window-first-hold": window_hold(False),
        "window-shortest-hold": window_hold(True),
    }
    earlier: dict[str, Any] = (
        json.loads(args.reuse.read_text()) if args.reuse else {"seeds": seeds, "rows": {}}
    )
    if earlier["seeds"] != seeds:
        parser.error(f"--reuse {args.reuse}: its seeds differ from these {len(seeds)} traces")
    for name, rows in earlier["rows"].items():
        if name in rules or name in HEURISTICS or name == "sched2":
            results[name], wall[name] = rows, 0.0
    for name, rule in rules.items():
        if name in results:
            continue
        t0 = time.perf_counter()
        results[name] = batched_rows(seeds, rule)
        wall[name] = time.perf_counter() - t0
    names = (() if args.no_lookahead else ("sched2",)) + HEURISTICS
    for name in names:
        if name in results:
            continue
        t0 = time.perf_counter()
        results[name] = [
            simulate(make_workload("sched2", seed=s, load=LOAD), make_scheduler(name)).summary()
            for s in seeds
        ]
        wall[name] = time.perf_counter() - t0
    print(f"test seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} traces), load {LOAD}; mean ± 95 % CI")
    print(f"{'scheduler':<58} {'avg JCT (s)':>18} {'makespan (s)':>20} {'avg eff.':>14} wall s")
    for name, rows in results.items():
        cells = [interval([r[m] for r in rows]) for m in METRICS]
        print(
            f"{name:<58} {cells[0][0]:>10,.0f} ± {cells[0][1]:>5,.0f} "
            f"{cells[1][0]:>11,.0f} ± {cells[1][1]:>6,.0f} {cells[2][0]:>7.3f} ± "
            f"{cells[2][1]:.3f} {wall[name]:>6.0f}"
        )
    verdicts(results, dqn_names)
    if args.json is not None:
        args.json.write_text(json.dumps({"seeds": seeds, "rows": results}, indent=1))


if __name__ == "__main__":
    main()
