"""Why SCED²'s paper-method DQN misses the makespan target that the hand rule
``window-shortest-hold`` meets in the same action space (issue 29, SCED² part, row 21).

On the held-out test traces (`dlsched.papers.sched2.train.TEST_SEEDS`, the ones of the recorded
figures; load 1.8, 15 × 8 GPUs, 1,000 jobs) the greedy network is replayed on
`BatchedSched2Env`; at every decision the rule's choice in the same state is recorded, and the
disagreement is put in one class:

* ``hold_vs_local``: the DQN holds (φ) where the rule starts a job at its best locality;
* ``nonlocal_vs_hold``: the DQN starts a job away from its best locality where the rule holds
  (no window job fits at its best locality);
* ``nonlocal_vs_local``: the DQN starts a job away from its best locality where the rule starts
  another one at its best locality;
* ``other_local``: both start a job at its best locality, not the same one (the rule's is the
  shortest such);
* ``other``: anything else (both forced to pick, the rule's shortest legal job not taken).

Each decision is also tagged *late* when every job of the trace has arrived (the queue only
drains). Counterfactual policies ``DQN except X`` take the rule's action in the states of class
X (or, with ``late``, in every late state) and the DQN's elsewhere; each is a full replay of the
30 traces.

Per trace and policy, the makespan × the cluster's 120 GPUs is split exactly into: the jobs'
GPU-seconds at their best locality (the same for every policy), the extra GPU-seconds of slower
placements, and idle GPU-seconds while (a) a window job fits (only a hold leaves GPUs idle
then), (b) jobs wait but none of the window fits (fragmentation or a large head job), (c) no job
waits (arrival gaps and the drained tail). The drained tail is also reported directly: when the
last job starts, which job ends last, its GPUs and run time.

Makespan ratios are also printed to a heuristic's per-trace makespans (``--heuristic``, default
Tiresias, the best heuristic on these traces), with paired-bootstrap 95 % intervals. With
``--branches K`` the script also plays K states of ``--branch-class`` per trace both ways (the
DQN's action, the rule's), the greedy DQN to the end, and prints the true value gaps.

Q evidence for a class: the greedy Q(s, a_DQN) − Q(s, a_rule) in its states against the
network's Q error, |Q(s, a) − G| with G the discounted (card's γ) incremental-reward return that
followed on the trajectory (the last 60 steps of each episode left out).

    PYTHONPATH=src python benchmarks/sched2_makespan_diagnose.py --traces 30 --json OUT.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sched2_paper import LOAD, packing_spans, ratio_interval

from dlsched.api import simulate
from dlsched.papers.sched2.batched_env import BatchedSched2Env
from dlsched.papers.sched2.policy import PAPER_POLICY_DIR, load_policy
from dlsched.papers.sched2.train import TEST_SEEDS
from dlsched.schedulers.registry import make_scheduler
from dlsched.workloads.registry import make_workload

CLASSES = ("hold_vs_local", "nonlocal_vs_hold", "nonlocal_vs_local", "other_local", "other")
TAIL = 60
"""Steps at the end of an episode whose discounted return is cut short (γ 0.9: 0.9^60 ≈ 0.2 %)."""


def rule_and_facts(env: BatchedSched2Env, masks: Any) -> tuple[Any, Any]:
    """``window-shortest-hold``'s actions (as `sched2_paper.window_hold(True)`) and the
    ``(B, J)`` window jobs packing would place at their best locality now."""
    j, m = env.shape.slots, env.shape.gpus_per_server
    win = env.window()
    legal = masks[:, :j]
    demand = np.where(legal, env.ops.take(env.gpus, np.maximum(win, 0)), 0)
    local = legal & (packing_spans(env.free, demand) == -(-demand // m))
    score = -env.ops.take(env.work, np.maximum(win, 0))
    best_local = np.where(local, score, -np.inf).argmax(axis=1)
    any_legal = np.where(legal, score, -np.inf).argmax(axis=1)
    act = np.where(local.any(axis=1), best_local, np.where(masks[:, j], j, any_legal))
    return act, local


def classify(act: Any, rule: Any, local: Any, j: int) -> Any:
    """``(B,)`` class index into `CLASSES` of each disagreement, -1 where both agree."""
    rows = np.arange(len(act))
    a_local = (act < j) & local[rows, np.minimum(act, j - 1)]
    r_pick = rule < j
    cls = np.full(len(act), 4)
    cls[(act == j) & r_pick] = 0
    cls[(act < j) & ~a_local & ~r_pick] = 1
    cls[(act < j) & ~a_local & r_pick & local.any(axis=1)] = 2
    cls[a_local & r_pick] = 3
    return np.where(act == rule, -1, cls)


def replay(
    net: Any,
    seeds: list[int],
    swap: str = "",
    gamma: float = 0.9,
    jobs: int = 1000,
    hold_mask: str = "none",
) -> dict[str, Any]:
    """One greedy replay of ``seeds``; the rule's action replaces the DQN's in the states of
    class ``swap`` (a `CLASSES` name, ``"late"``, ``"rule"`` for every state, several joined by
    ``+``, or ``""`` for the DQN itself); the network acts under ``hold_mask`` (its card's)."""
    env = BatchedSched2Env(
        len(seeds), num_jobs=jobs, load=LOAD, reward="incremental", hold_mask=hold_mask
    )
    obs, masks = env.reset(seeds)
    j = env.shape.slots
    rows = np.arange(len(seeds))
    done = np.zeros(len(seeds), dtype=bool)
    steps: list[dict[str, Any]] = []
    metrics: dict[int, dict[str, float]] = {}
    while not done.all():
        with torch.no_grad():
            q = net(torch.as_tensor(obs)).numpy()
        act = np.where(masks, q, -np.inf).argmax(axis=1)
        rule, local = rule_and_facts(env, masks)
        cls = classify(act, rule, local, j)
        late = env.arrived == env.num_jobs
        for part in swap.split("+") if swap else []:
            if part == "rule":
                act = rule
            elif part == "late":
                act = np.where(late, rule, act)
            else:
                act = np.where(cls == CLASSES.index(part), rule, act)
        steps.append({
            "live": ~done, "cls": cls, "late": late,
            "q_taken": q[rows, act], "q_gap": q[rows, act] - q[rows, rule],
        })  # fmt: skip
        obs, rewards, ended, masks, info = env.step(act)
        steps[-1]["r"] = np.asarray(rewards)
        metrics.update(info["episodes"])
        done |= np.asarray(ended)
    rec = {k: np.stack([s[k] for s in steps]) for k in steps[0]}  # (T, B)
    ret, acc = np.zeros_like(rec["r"]), np.zeros(len(seeds))
    for t in range(len(steps) - 1, -1, -1):
        acc = rec["r"][t] + gamma * acc * rec["live"][t]
        ret[t] = acc
    live = rec["live"].astype(bool)
    last = live.sum(axis=0)
    rec["cut"] = live & (np.arange(len(steps))[:, None] < (last - TAIL)[None, :])
    rec["ret"] = ret
    jobs = {k: np.asarray(getattr(env, k)).copy() for k in ("submit", "work", "gpus", "start")}
    jobs["finish"] = np.asarray(env.finish).copy()
    jobs["speed"] = np.asarray(env.speed).copy()
    return {"rec": rec, "jobs": jobs, "metrics": [metrics[i] for i in range(len(seeds))]}


def dqn_trajectory(
    net: Any, seed: int, jobs: int, cls_name: str, hold_mask: str = "none"
) -> dict[str, Any]:
    """The greedy DQN on one trace: its actions, and per step of class ``cls_name`` the
    rule's action, the network's Q gap and the picked job's GPUs and ideal run time (s)."""
    env = BatchedSched2Env(1, num_jobs=jobs, load=LOAD, reward="incremental", hold_mask=hold_mask)
    obs, masks = env.reset([seed])
    j = env.shape.slots
    out: dict[str, Any] = {"actions": [], "points": [], "rule": [], "q_gap": [], "job": []}
    while True:
        with torch.no_grad():
            q = net(torch.as_tensor(obs)).numpy()[0]
        a = int(np.where(masks[0], q, -np.inf).argmax())
        rule, local = rule_and_facts(env, masks)
        if classify(np.array([a]), rule, local, j)[0] == CLASSES.index(cls_name):
            job = int(env.window()[0, a]) if a < j else -1
            out["points"].append(len(out["actions"]))
            out["rule"].append(int(rule[0]))
            out["q_gap"].append(float(q[a] - q[int(rule[0])]))
            out["job"].append((int(env.gpus[0, job]), float(env.work[0, job])) if a < j else None)
        out["actions"].append(a)
        obs, _, _, masks, info = env.step(np.array([a]))
        if info["episodes"]:
            out["metrics"] = info["episodes"][0][1]
            return out


def branch_values(
    net: Any,
    seed: int,
    jobs: int,
    traj: dict[str, Any],
    picks: list[int],
    gamma: float,
    hold_mask: str = "none",
) -> list[dict[str, float]]:
    """For each chosen point (index into ``traj["points"]``), the DQN's action and the rule's,
    each followed by the greedy DQN to the end: the true Q^DQN difference (DQN's first action
    minus the rule's) of the card's discounted incremental return, of the undiscounted one
    (= Σ_j E_j difference), and the makespan and average-JCT differences (s)."""
    starts = np.repeat([traj["points"][k] for k in picks], 2)
    first = np.array([[traj["actions"][traj["points"][k]], traj["rule"][k]] for k in picks])
    first = first.reshape(-1)
    b = len(starts)
    env = BatchedSched2Env(b, num_jobs=jobs, load=LOAD, reward="incremental", hold_mask=hold_mask)
    obs, masks = env.reset([seed] * b)
    recorded = np.array(traj["actions"])
    disc, ret, total = np.ones(b), np.zeros(b), np.zeros(b)
    done, step = np.zeros(b, dtype=bool), 0
    metrics: dict[int, dict[str, float]] = {}
    while not done.all():
        with torch.no_grad():
            q = net(torch.as_tensor(obs)).numpy()
        greedy = np.where(masks, q, -np.inf).argmax(axis=1)
        replay = recorded[min(step, len(recorded) - 1)]
        a = np.where(step < starts, replay, np.where(step == starts, first, greedy))
        obs, rewards, ended, masks, info = env.step(a)
        live = (step >= starts) & ~done
        ret += np.where(live, disc * rewards, 0.0)
        total += np.where(live, rewards, 0.0)
        disc = np.where(live, disc * gamma, disc)
        metrics.update(info["episodes"])
        done |= np.asarray(ended)
        step += 1
    rows = []
    for n, k in enumerate(picks):
        d, r = 2 * n, 2 * n + 1
        rows.append({
            "q_gap": traj["q_gap"][k], "true_gap": float(ret[d] - ret[r]),
            "undiscounted_gap": float(total[d] - total[r]),
            "makespan_gap_s": metrics[d]["makespan_s"] - metrics[r]["makespan_s"],
            "avg_jct_gap_s": metrics[d]["avg_jct_s"] - metrics[r]["avg_jct_s"],
            "gpus": float(traj["job"][k][0]), "ideal_run_s": traj["job"][k][1],
        })  # fmt: skip
    return rows


def gpu_seconds(jobs: dict[str, Any], i: int, gpus_total: int, slots: int) -> dict[str, float]:
    """Trace ``i``'s makespan × ``gpus_total`` split into GPU-seconds (module docstring) and its
    drained tail."""
    sub, work, g = jobs["submit"][i], jobs["work"][i], jobs["gpus"][i]
    start, fin, speed = jobs["start"][i], jobs["finish"][i], jobs["speed"][i]
    order = np.argsort(sub, kind="stable")
    times = np.unique(np.concatenate([sub, start, fin]))
    idle = {"idle_fit": 0.0, "idle_nofit": 0.0, "idle_empty": 0.0}
    for t0, t1 in itertools.pairwise(times):
        running = (start <= t0) & (fin > t0)
        free = gpus_total - int(g[running].sum())
        if free == 0:
            continue
        waiting = ((sub <= t0) & (start > t0))[order]
        head = order[waiting][:slots]
        key = "idle_empty" if not len(head) else "idle_fit"
        if len(head) and int(g[head].min()) > free:
            key = "idle_nofit"
        idle[key] += free * (t1 - t0)
    last, longest = int(np.argmax(fin)), int(np.argmax(work))
    crit = int(np.argmax(sub + work))  # the job of the critical-path bound
    span = float(fin.max() - sub.min())
    return {
        "makespan_s": span,
        "ideal_gpu_s": float((g * work).sum()),
        "placement_loss_gpu_s": float((g * work * (1 / speed - 1)).sum()),
        **idle,
        "last_arrival_s": float(sub.max() - sub.min()),
        "last_start_s": float(start.max() - sub.min()),
        "tail_s": float(fin.max() - start.max()),
        "last_job_gpus": float(g[last]),
        "last_job_run_s": float(work[last] / speed[last]),
        "last_job_start_s": float(start[last] - sub.min()),
        "last_job_wait_s": float(start[last] - sub[last]),
        "last_job_speed": float(speed[last]),
        "last_job_is_longest": float(last == longest),
        "last_job_is_critical": float(last == crit),
        "critical_job_gpus": float(g[crit]),
        "critical_job_wait_s": float(start[crit] - sub[crit]),
        "critical_job_speed": float(speed[crit]),
        "critical_job_end_s": float(fin[crit] - sub.min()),
        "longest_job_start_s": float(start[longest] - sub.min()),
        "longest_job_speed": float(speed[longest]),
        "longest_job_gpus": float(g[longest]),
        "path_bound_s": float((sub + work).max() - sub.min()),
        "nonlocal_starts": float((speed < 1).sum()),
    }


def summarise(run: dict[str, Any], gpus_total: int, slots: int) -> dict[str, Any]:
    """Per-trace GPU-second accounts, class counts and the Q evidence of one replay."""
    rec, n = run["rec"], len(run["metrics"])
    live = rec["live"].astype(bool)
    accounts = [gpu_seconds(run["jobs"], i, gpus_total, slots) for i in range(n)]
    counts = {c: int((live & (rec["cls"] == k)).sum()) for k, c in enumerate(CLASSES)}
    late = {c: int((live & rec["late"] & (rec["cls"] == k)).sum()) for k, c in enumerate(CLASSES)}
    cut = rec["cut"]
    err = np.abs(rec["q_taken"] - rec["ret"])[cut]
    q_by_class = {}
    for k, c in enumerate(CLASSES):
        sel = cut & (rec["cls"] == k)
        if sel.any():
            q_by_class[c] = {
                "states": int(sel.sum()),
                "median_q_gap": float(np.median(rec["q_gap"][sel])),
                "mean_q_gap": float(rec["q_gap"][sel].mean()),
                "mean_abs_q_minus_return_there": float(
                    np.abs(rec["q_taken"] - rec["ret"])[sel].mean()
                ),
            }  # fmt: skip
    return {
        "metrics": run["metrics"],
        "accounts": accounts,
        "steps": int(live.sum()),
        "disagreements": counts,
        "disagreements_late": late,
        "late_steps": int((live & rec["late"]).sum()),
        "mean_abs_q_minus_return": float(err.mean()),
        "q_by_class": q_by_class,
    }


def report(out: dict[str, dict[str, Any]], baseline: list[float] | None = None) -> None:
    """Print the makespan, GPU-second account and tail of every policy beside the DQN's (and,
    given the heuristic's per-trace makespans, the ratio to them, paired bootstrap 95 %)."""
    base = out["dqn"]
    mk = {k: [r["makespan_s"] for r in v["metrics"]] for k, v in out.items()}
    if baseline is not None:
        print(f"heuristic baseline: mean makespan {np.mean(baseline):,.0f} s")
        for name in out:
            r = ratio_interval(mk[name], baseline)
            slow = [a for a in out[name]["accounts"] if a["last_job_speed"] < 1]
            extra = sum(a["last_job_run_s"] * (1 - a["last_job_speed"]) for a in slow)
            extra /= max(len(slow), 1)
            print(
                f"  {name:<34} makespan / heuristic {r[0]:.3f} [{r[1]:.3f}, {r[2]:.3f}]; last job "
                f"placed away from its best locality on {len(slow)} traces"
                + (f" ({extra / 3600:.1f} h longer than at its best)" if slow else "")
            )
    print(f"{'policy':<26}{'makespan':>10}{'/DQN':>22}{'avgJCT':>9}{'eff':>7}  "
          "per trace, hours of 120 GPUs: placement idle_fit idle_nofit idle_empty | "
          "last start, tail, last job GPUs/run h")  # fmt: skip
    for name, v in out.items():
        acc = v["accounts"]

        def mean(key: str, acc: list[dict[str, float]] = acc) -> float:
            return float(np.mean([a[key] for a in acc]))

        ratio = ratio_interval(mk[name], mk["dqn"])
        jct = np.mean([r["avg_jct_s"] for r in v["metrics"]])
        eff = np.mean([r["avg_effectiveness"] for r in v["metrics"]])
        parts = [mean(k) / 120 / 3600 for k in ("placement_loss_gpu_s", "idle_fit")]
        parts += [mean(k) / 120 / 3600 for k in ("idle_nofit", "idle_empty")]
        print(
            f"{name:<26}{np.mean(mk[name]):>10,.0f} {ratio[0]:.3f} [{ratio[1]:.3f},{ratio[2]:.3f}]"
            f"{jct:>9,.0f}{eff:>7.3f}  "
            + " ".join(f"{p:6.1f}" for p in parts)
            + f" | {mean('last_start_s') / 3600:5.1f} {mean('tail_s') / 3600:5.1f} "
            f"{mean('last_job_gpus'):4.1f}/{mean('last_job_run_s') / 3600:4.1f}"
        )
    print("disagreements with the rule (DQN replay; late = all jobs arrived):")
    print(f"  steps {base['steps']}, late steps {base['late_steps']}")
    for c in CLASSES:
        q = base["q_by_class"].get(c, {})
        print(
            f"  {c:<18} {base['disagreements'][c]:>6} (late {base['disagreements_late'][c]:>5})"
            f"  median Q gap {q.get('median_q_gap', float('nan')):.3f}"
            f"  |Q-G| there {q.get('mean_abs_q_minus_return_there', float('nan')):.3f}"
        )
    print(f"  mean |Q - G| over all states: {base['mean_abs_q_minus_return']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", type=Path, default=PAPER_POLICY_DIR)
    parser.add_argument("--traces", type=int, default=30, help="test traces (<= 30)")
    parser.add_argument(
        "--swap",
        default=",".join(("rule", *CLASSES, "late")),
        help="comma-separated counterfactuals: 'rule' (the rule throughout), a class, 'late'; "
        "'a+b' swaps both",
    )
    parser.add_argument(
        "--heuristic",
        default="tiresias",
        help="heuristic whose per-trace makespans the ratios are taken to (the best heuristic "
        "on these traces, RESULTS 2026-11-26); '' for none",
    )
    parser.add_argument("--jobs", type=int, default=1000, help="jobs per trace (1000: the paper)")
    parser.add_argument("--branch-class", default="nonlocal_vs_hold", choices=CLASSES)
    parser.add_argument(
        "--branches",
        type=int,
        default=0,
        help="per branch trace: states of --branch-class played both ways (half the largest "
        "picked jobs by GPU-seconds, half at random), DQN to the end; 0: none",
    )
    parser.add_argument("--branch-traces", type=int, default=2, help="first test traces used")
    parser.add_argument("--json", type=Path, default=None, help="also write everything here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    net, _, card = load_policy(args.policy)
    net.eval()
    # the rule holds only where no window job fits locally, so its actions are legal under
    # the ``local`` mask too: a masked network is diagnosed under its own mask
    hold_mask = args.hold_mask = str(card.hyperparams.get("hold_mask", "none"))
    gamma = float(card.hyperparams.get("gamma", 0.99))
    shapes = card.shapes
    gpus_total, slots = int(shapes["N"]) * int(shapes["M"]), int(shapes["J"])
    seeds = list(TEST_SEEDS[: args.traces])
    out: dict[str, dict[str, Any]] = {}
    for swap in ["", *[s for s in args.swap.split(",") if s]]:
        t0, c0 = time.perf_counter(), time.process_time()
        run = replay(net, seeds, swap, gamma, args.jobs, hold_mask)
        out[swap or "dqn"] = summarise(run, gpus_total, slots)
        print(f"# {swap or 'dqn'}: {time.perf_counter() - t0:.0f} s wall, "
              f"{time.process_time() - c0:.0f} s CPU", flush=True)  # fmt: skip
    baseline = None
    if args.heuristic:
        workloads = [make_workload("sched2", seed=s, load=LOAD, num_jobs=args.jobs) for s in seeds]
        sched = args.heuristic
        baseline = [simulate(w, make_scheduler(sched)).summary()["makespan_s"] for w in workloads]
    report(out, baseline)
    branches = branch_report(net, seeds[: args.branch_traces], args, gamma) if args.branches else []
    if args.json is not None:
        payload = {"seeds": seeds, "runs": out, "branches": branches}
        args.json.write_text(json.dumps(payload, indent=1))


def branch_report(
    net: Any, seeds: list[int], args: argparse.Namespace, gamma: float
) -> list[dict[str, float]]:
    """Play ``--branches`` states of ``--branch-class`` per trace both ways; print the true
    value gaps beside the network's Q gaps."""
    rows: list[dict[str, float]] = []
    rng = np.random.default_rng(0)
    for seed in seeds:
        t0 = time.process_time()
        traj = dqn_trajectory(net, seed, args.jobs, args.branch_class, args.hold_mask)
        size = [g * w if g else 0.0 for g, w in (x or (0, 0.0) for x in traj["job"])]
        order = list(np.argsort(size)[::-1])
        big = order[: args.branches // 2]
        rest = [k for k in order if k not in big]
        pick = big + list(
            rng.choice(rest, size=min(len(rest), args.branches - len(big)), replace=False)
        )
        found = branch_values(
            net, seed, args.jobs, traj, [int(k) for k in pick], gamma, args.hold_mask
        )
        rows += [{**r, "seed": float(seed)} for r in found]
        print(f"# branches on {seed}: {len(traj['points'])} states of {args.branch_class}, "
              f"{len(found)} played, {time.process_time() - t0:.0f} s CPU", flush=True)  # fmt: skip
    if not rows:
        return rows
    keys = ("q_gap", "true_gap", "undiscounted_gap", "makespan_gap_s", "avg_jct_gap_s")
    print(f"{'GPUs':>4} {'run h':>6} " + " ".join(f"{k:>16}" for k in keys))
    for r in sorted(rows, key=lambda r: -r["gpus"] * r["ideal_run_s"]):
        print(f"{r['gpus']:4.0f} {r['ideal_run_s'] / 3600:6.1f} "
              + " ".join(f"{r[k]:16.3f}" for k in keys))  # fmt: skip
    q, true = np.array([r["q_gap"] for r in rows]), np.array([r["true_gap"] for r in rows])
    print(
        f"true γ-return gap > 0 (the DQN's action really better by its own objective) in "
        f"{np.mean(true > 0):.2f}; median true gap {np.median(true):+.3f}, median Q gap "
        f"{np.median(q):+.3f}, mean |Q gap − true gap| {np.abs(q - true).mean():.3f}"
    )
    return rows


if __name__ == "__main__":
    main()
