"""DL2's paper preset: one supervised start, then actor-critic variants from it (issue 29's
diagnosis; benchmarks/RESULTS.md 2026-11-26, runs A–E, logs in ``benchmarks/dl2_paper_runs``).

    PYTHONPATH=src python benchmarks/dl2_paper_variants.py sl --out runs/variants
    PYTHONPATH=src python benchmarks/dl2_paper_variants.py A --minutes 20 --out runs/variants

``sl`` makes the start (DRF on 4 traces, 1,000 mini-batches); ``A`` is the paper exactly; ``B``
adds 1,000 value-only updates and standardised advantages; ``C`` is B with lr 1e-5 and β 0.01;
``D`` is B with the reward minus jobs in the system (not the paper's); ``E`` is B with β = 0;
``F`` is E with one update of 4,096 samples every 16 slots (same samples a slot, 16× fewer,
larger updates; 60 value-only updates first, validation every 60).
Second session (one suspect of A's drift changed at a time, A otherwise): ``G`` no replay (the
latest 256 samples, on-policy), ``H`` the exploration rule's actions out of the policy gradient,
``S`` staggered environment starts, ``T`` per-action TD inside a slot, ``U`` γ = 0 (the
authors' code: advantage = slot reward − V(s)), ``Z`` no signal (targets permuted within each
mini-batch: the control), ``V`` / ``N`` Table 2's no value network / no exploration, ``L`` /
``Y`` A / Z with lr 1e-5, ``W`` U with lr 1e-5.
Third session: ``J`` per-job credit (``reward="job"``, the authors' code's option; γ = 0,
advantage = the action's job reward − V(s)); ``--teacher`` makes a start imitating another
heuristic (not the paper's DRF; a diagnosis: is a better policy representable and near?).
Fourth session (helper ``dl2z``): ``P`` the authors' code's prioritised replay
(``PaperSpec.priority``, `dlsched.papers.dl2.prioritized`; not in the paper), A otherwise;
``Q`` P with γ = 0 (the authors' RL setting: advantage r − V(s) with prioritised replay);
``R`` P with lr 1e-5 (L with prioritised replay).
Every run's log adds ``offgreedy_share``: the share of its mini-batches' actions that are not
the current policy's arg-max (where a policy gradient can learn), and ``is_weight``.
Each variant validates every 750 updates (``--eval-every``) and keeps its best policy in
``OUT/NAME``; ``--seed`` > 0 makes (or reuses) its own supervised start ``OUT/sl-SEED``.
"""

from __future__ import annotations

import argparse
import csv
import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dlsched.papers.dl2.algorithm import Batch
from dlsched.papers.dl2.network import masked_logits
from dlsched.papers.dl2.paper import COLUMNS, PaperLearner, PaperSpec, SlotReplay, paper_config
from dlsched.rl.checkpoint import save_checkpoint

B: dict[str, Any] = {"config": paper_config(normalize_advantage=True), "critic_warmup": 1000}
VARIANTS: dict[str, dict[str, Any]] = {
    "A": {"num_envs": 16},
    "B": {"num_envs": 32, **B},
    "C": {**B, "num_envs": 32, "config": replace(B["config"], rl_lr=1e-5, entropy_beta=0.01)},
    "D": {**B, "num_envs": 32, "reward": "jct"},
    "E": {**B, "num_envs": 32, "config": replace(B["config"], entropy_beta=0.0)},
    "F": {
        **B,
        "num_envs": 32,
        "critic_warmup": 60,
        "eval_every": 60,
        "config": replace(B["config"], entropy_beta=0.0, batch_size=4096, slots_per_update=16),
    },
    # the paper (A) with one suspect changed at a time (2026-11-26, second session)
    "G": {"num_envs": 16, "config": paper_config(replay=False)},
    "H": {"num_envs": 16, "explored_in_pg": False},
    "S": {"num_envs": 16, "stagger": True},
    "T": {"num_envs": 16, "slot_td": "chain"},
    "U": {"num_envs": 16, "config": paper_config(gamma=0.0)},
    "Z": {"num_envs": 16},  # A with no signal: targets permuted within each mini-batch
    # Table 2's ablations of A
    "V": {"num_envs": 16, "config": paper_config(value_net=False)},
    "N": {"num_envs": 16, "config": paper_config(exploration=False)},
    # A with ten times smaller steps, with and without signal
    "L": {"num_envs": 16, "config": paper_config(rl_lr=1e-5)},
    "Y": {"num_envs": 16, "config": paper_config(rl_lr=1e-5)},
    "W": {"num_envs": 16, "config": paper_config(rl_lr=1e-5, gamma=0.0)},  # U with lr 1e-5
    # third session: per-job credit (the authors' code's TS_REWARD_PLUS_JOB_REWARD), γ = 0
    "J": {"num_envs": 16, "reward": "job", "config": paper_config(gamma=0.0)},
    # fourth session: the authors' code's prioritised replay
    "P": {"num_envs": 16, "priority": True},
    "Q": {"num_envs": 16, "priority": True, "config": paper_config(gamma=0.0)},
    "R": {"num_envs": 16, "priority": True, "config": paper_config(rl_lr=1e-5)},
}
NO_SIGNAL = ("Z", "Y")
"""Variants whose mini-batches get `permuted_targets`."""


def permuted_targets(replay: SlotReplay) -> None:
    """Variant Z: each sample of a mini-batch gets another sample's reward, next state and
    done (the control of no signal: advantages keep their scale, lose their link to actions)."""
    sample = replay.sample

    def shuffled(n: int, rng: np.random.Generator, device: torch.device, **kw: Any) -> Batch:
        batch = sample(n, rng, device, **kw)
        perm = torch.from_numpy(rng.permutation(n)).to(device)
        return batch._replace(
            rewards=batch.rewards[perm], next_obs=batch.next_obs[perm], dones=batch.dones[perm]
        )

    replay.sample = shuffled  # type: ignore[method-assign]


def watch_batches(learner: PaperLearner, seen: list[tuple[float, float]]) -> None:
    """Record per mini-batch the share of actions that are not the policy's arg-max and the
    mean policy-gradient weight (importance weight under prioritised replay; else 1)."""
    replay, sample = learner.replay, learner.replay.sample

    def watched(n: int, rng: np.random.Generator, device: torch.device, **kw: Any) -> Batch:
        batch = sample(n, rng, device, **kw)
        with torch.no_grad():
            logits = masked_logits(learner.learner.policy(batch.obs), batch.masks)
        off = float((logits.argmax(dim=1) != batch.actions).float().mean())
        w = 1.0 if batch.pg_weights is None else float(batch.pg_weights.mean())
        seen.append((off, w))
        return batch

    replay.sample = watched  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", choices=("sl", *VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("runs/variants"))
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--updates", type=int, default=None, help="stop after this many")
    parser.add_argument("--eval-every", type=int, default=None, help="updates per validation")
    parser.add_argument("--seed", type=int, default=0, help="training seed (SL and RL)")
    parser.add_argument(
        "--init", type=Path, default=None,
        help="supervised start (default OUT/sl, OUT/sl-SEED; made first when missing)",
    )  # fmt: skip
    parser.add_argument("--name", default=None, help="run directory under OUT (default VARIANT)")
    parser.add_argument(
        "--teacher", default="drf", help="heuristic of the supervised start (the paper: drf)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    init = args.init or args.out / ("sl" if args.seed == 0 else f"sl-{args.seed}")
    base = PaperSpec(
        out=init, sl_traces=4, sl_steps=1000, eval_every=750, device="cpu",
        config=paper_config(seed=args.seed), teacher=args.teacher,
    )  # fmt: skip
    if args.variant == "sl" or not (init / "policy.pt").exists():
        t0 = time.perf_counter()
        learner = PaperLearner(base)
        learner.step()
        learner.validate()
        save_checkpoint(base.out, *learner.policy_files())
        logging.info("sl seed %d: val %.1f s (%.0f s)", args.seed, learner.val_jct,
                     time.perf_counter() - t0)  # fmt: skip
        if args.variant == "sl":
            return
    options = dict(VARIANTS[args.variant])
    options["config"] = replace(options.get("config", base.config), seed=args.seed)
    if args.eval_every:
        options["eval_every"] = args.eval_every
    out = args.out / (args.name or args.variant)
    spec = replace(base, out=out, init=init, **options)
    spec.out.mkdir(parents=True, exist_ok=True)
    learner = PaperLearner(spec)
    if args.variant in NO_SIGNAL:
        permuted_targets(learner.replay)
    seen: list[tuple[float, float]] = []
    watch_batches(learner, seen)
    columns = (*COLUMNS, "offgreedy_share", "is_weight")
    learner.step()  # loads the supervised start
    start = learner.validate()
    t0, best = time.perf_counter(), start.rank[0]
    with (spec.out / "train_log.csv").open("w", newline="") as fh:
        csv.writer(fh).writerow(columns)
        csv.writer(fh).writerow(
            ["sl", 0, *[""] * (len(COLUMNS) - 4), start.row["val_avg_jct_s"], 0, "", ""]
        )
    while time.perf_counter() < t0 + 60.0 * args.minutes and (
        args.updates is None or learner.updates < args.updates
    ):
        row = learner.step()
        validation = learner.validate()
        row.update(validation.row, wall_s=time.perf_counter() - t0)
        off, weight = np.mean(seen, axis=0).tolist()
        row.update(offgreedy_share=off, is_weight=weight)
        seen.clear()
        if validation.rank[0] < best:
            best = validation.rank[0]
            save_checkpoint(spec.out, *learner.policy_files())
        with (spec.out / "train_log.csv").open("a", newline="") as fh:
            csv.writer(fh).writerow([row.get(c, "") for c in columns])
        logging.info("%s: %s", args.variant, row)


if __name__ == "__main__":
    main()
