"""Train sb3-contrib's MaskablePPO on a dlsched environment, then compare it with baselines.

Needs the ``rl`` extra (``pip install torch==2.13.0 -e '.[rl]'``; torch pinned in the same
command so pip keeps the CPU build). Example::

    python examples/train_maskable_ppo.py dlsched/DL2Slot-v0 --minutes 12 --baselines drf \\
        --out runs/ppo_dl2
    python examples/train_maskable_ppo.py dlsched/DeepRM-v0 -o load=1.3 -o horizon_steps=50 \\
        -o reward=wait -o observation=compact -o work_conserving=True -o window=shortest \\
        --minutes 25 --baselines sjf,tetris-star --out runs/ppo_deeprm

(the DeepRM options are the ones MaskablePPO learns with; without them it gets the paper's image
state and reward: ``benchmarks/RESULTS.md``, issue 19). MaskablePPO (``MlpPolicy``) runs
with the `PpoSettings` of `PPO_SETTINGS` for the environment — on ``DL2Slot-v0`` 8 copies of
the environment, 64 steps each a rollout, rewards normalised by SB3's ``VecNormalize``, 4
passes of 256-sample mini-batches; elsewhere SB3's defaults (one environment, γ = 0.99, 2,048
steps a rollout) — for ``--minutes`` of wall time;
the model is saved as ``OUT/model.zip``, each training episode's return in ``OUT/episodes.csv``
(and a progress line is logged every minute). It is then evaluated greedily with
`dlsched.rl.adapter.from_sb3` in `dlsched.compare` against the baselines, on held-out seeds: the
environments draw their training traces from seeds ≥ 1,000,000 (DL2) or uniformly from
0..2^31 (DeepRM, SCED²), and the default evaluation seeds (101–130 for DL2Slot-v0, 101–110 for
DL2-v0 and SCED², 900000–900009 for DeepRM: the repository's validation seeds) are checked
against the traces actually trained on. The table and ``OUT/eval.json`` give each scheduler's
mean and 95 % confidence half-width of average JCT (s) and average slowdown, and the learner's
paired difference from each baseline (same seeds) with its 95 % interval.
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

import dlsched  # noqa: F401 - registers the environments
from dlsched.experiments.compare import mean_ci95, parse_seeds, run_grid, summarise
from dlsched.papers.deeprm.env import DeepRMEnv
from dlsched.papers.dl2.env import Dl2Env
from dlsched.papers.sched2.env import Sched2Env
from dlsched.rl.adapter import from_sb3
from dlsched.sim import Result, SimulationStalled
from dlsched.workloads.deeprm import STEP_S

log = logging.getLogger("train_maskable_ppo")

DEFAULT_EVAL_SEEDS = {
    "dlsched/DeepRM-v0": "900000-900009",
    # 10 seeds did not resolve a 400 s difference (benchmarks/RESULTS.md, issue 34)
    "dlsched/DL2Slot-v0": "101-130",
}
SCHED2_ENV_ONLY = {"slots", "order", "max_steps", "profile_seed", "reward"}
METRICS = ("avg_jct_s", "avg_slowdown")


@dataclass(frozen=True)
class PpoSettings:
    """MaskablePPO's hyper-parameters (Stable-Baselines3's names; its defaults unless set).

    Attributes:
        n_envs: copies of the environment stepped in turn (SB3's ``DummyVecEnv``), so that a
            rollout spans that many traces at once.
        n_steps: steps per copy per rollout (one policy update a rollout of
            ``n_envs · n_steps`` steps).
        batch_size: samples per gradient mini-batch.
        n_epochs: passes over each rollout.
        learning_rate: Adam's step size.
        gamma: discount per environment step.
        gae_lambda: GAE's λ.
        normalize_reward: divide rewards by a running standard deviation of the discounted
            return (SB3's ``VecNormalize(norm_obs=False, norm_reward=True)``), so the value
            function's targets are O(1) whatever the reward's units. Observations are left as
            the environment gives them, so the saved model is evaluated on raw observations.
    """

    n_envs: int = 1
    n_steps: int = 2048
    batch_size: int = 64
    n_epochs: int = 10
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    normalize_reward: bool = False


WRAPPER_SETTINGS = ("n_envs", "normalize_reward")
"""`PpoSettings` fields that shape the training environment, not MaskablePPO's arguments."""

PPO_SETTINGS = {
    # Unnormalised, the value function explained nothing (explained variance < 0) and the
    # policy learned nothing in 180k steps. Normalised, with cheap updates (8 mini-batch steps
    # a rollout instead of 320), it learned with one seed and not another; a rollout over 8
    # traces at once (and batched forward passes: twice the steps a minute) learned with both.
    # benchmarks/RESULTS.md, issue 34.
    "dlsched/DL2Slot-v0": PpoSettings(
        n_envs=8, n_steps=64, batch_size=256, n_epochs=4, normalize_reward=True
    ),
}
"""Settings per environment id; others get SB3's defaults (DeepRM's figures were made so)."""


class TimeLimit(BaseCallback):
    """Stops training after ``seconds`` of wall time; records the traces trained on, and each
    episode's undiscounted return in ``log_path`` (CSV: ``wall_s`` seconds since the start,
    ``timesteps`` environment steps so far, ``episode_return`` the episode's summed reward);
    logs the mean return of the episodes since the last line every ``every_s`` seconds."""

    def __init__(self, seconds: float, log_path: Path, every_s: float = 60.0) -> None:
        super().__init__()
        self.seconds = seconds
        self.start = time.monotonic()
        self.trace_seeds: set[int] = set()
        self.every_s = every_s
        self._last_line = self.start
        self._returns: dict[int, float] = {}  # per environment of the vector
        self._recent: list[float] = []
        self._log = log_path.open("w")
        self._log.write("wall_s,timesteps,episode_return\n")

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            if "trace_seed" in info and info["trace_seed"] is not None:
                self.trace_seeds.add(int(info["trace_seed"]))
        original = getattr(self.training_env, "get_original_reward", None)  # VecNormalize
        rewards = original() if original is not None else self.locals["rewards"]
        now = time.monotonic()
        for i, (reward, done) in enumerate(zip(rewards, self.locals["dones"], strict=True)):
            self._returns[i] = self._returns.get(i, 0.0) + float(reward)
            if done:
                total = self._returns.pop(i)
                self._log.write(f"{now - self.start:.1f},{self.num_timesteps},{total:.6g}\n")
                self._log.flush()
                self._recent.append(total)
        if now - self._last_line >= self.every_s:
            mean = sum(self._recent) / len(self._recent) if self._recent else float("nan")
            log.info(
                "%.0f s: %d steps, %d episodes since the last line, mean return %.4g",
                now - self.start,
                self.num_timesteps,
                len(self._recent),
                mean,
            )
            self._recent = []
            self._last_line = now
        return now - self.start < self.seconds

    def _on_training_end(self) -> None:
        self._log.close()


def parse_option(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as a Python literal when it is one (``load=1.3``)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"-o {text!r}: expected key=value")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def evaluation_setting(env: gym.Env[Any, Any], options: dict[str, Any]) -> dict[str, Any]:
    """`dlsched.compare`'s workload and options matching the environment's episodes."""
    if isinstance(env, Dl2Env):
        return {"workload": env.workload_name, **env.workload_options}
    if isinstance(env, DeepRMEnv):
        return {
            "workload": "deeprm",
            "load": env.load,
            "horizon_steps": env.horizon_steps,
            "interval_s": STEP_S,  # DeepRM's agent acts at every time step
        }
    if isinstance(env, Sched2Env):
        return {
            "workload": "sched2",
            **{k: v for k, v in options.items() if k not in SCHED2_ENV_ONLY},
        }
    raise ValueError(f"no evaluation setting for {type(env).__name__}")


def training_env(
    make_env: Callable[[], gym.Env[Any, Any]], settings: PpoSettings
) -> gym.Env[Any, Any] | VecEnv:
    """``make_env()`` as SB3 trains on it: ``settings.n_envs`` copies stepped in turn, rewards
    normalised when ``settings`` say so (one plain environment when neither applies)."""
    if settings.n_envs == 1 and not settings.normalize_reward:
        return make_env()
    vec: VecEnv = DummyVecEnv([make_env] * settings.n_envs)
    if settings.normalize_reward:
        vec = VecNormalize(vec, norm_obs=False, norm_reward=True, gamma=settings.gamma)
    return vec


def paired_differences(
    results: list[Result], schedulers: int
) -> dict[str, dict[str, tuple[float, float]]]:
    """`run_grid`'s ``results`` (seed by seed, the learner first of ``schedulers``): per
    baseline and metric, the mean over seeds of the learner's value minus the baseline's on the
    same seed (s for ``avg_jct_s``), and its Student-t 95 % half-width."""
    runs = [results[i : i + schedulers] for i in range(0, len(results), schedulers)]
    return {
        runs[0][k].scheduler: {
            m: mean_ci95([float(r[0].summary()[m]) - float(r[k].summary()[m]) for r in runs])
            for m in METRICS
        }
        for k in range(1, schedulers)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "env_id", help="dlsched/DL2-v0, dlsched/DL2Slot-v0, dlsched/DeepRM-v0 or dlsched/SCED2-v0"
    )
    parser.add_argument(
        "-o",
        dest="options",
        type=parse_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment option (repeatable)",
    )
    parser.add_argument("--minutes", type=float, default=25.0, help="training wall time")
    parser.add_argument("--baselines", default="drf", help="comma-separated scheduler names")
    parser.add_argument("--eval-seeds", default=None, help="held-out seeds, e.g. 101-110")
    parser.add_argument("--seed", type=int, default=0, help="seed of MaskablePPO and the env")
    parser.add_argument("--threads", type=int, default=1, help="PyTorch threads (default 1)")
    parser.add_argument("--out", type=Path, default=Path("runs/maskable_ppo"))
    parser.add_argument(
        "--load",
        type=Path,
        default=None,
        help="evaluate this saved model (OUT/model.zip of an earlier run) instead of training; "
        "its folder's trained_seeds.json, when there, is checked against the evaluation seeds",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.minutes <= 0:
        parser.error(f"--minutes must be > 0, got {args.minutes}")
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    options = dict(args.options)
    try:
        env = gym.make(args.env_id, **options)
        seeds = parse_seeds(args.eval_seeds or DEFAULT_EVAL_SEEDS.get(args.env_id, "101-110"))
    except (ValueError, TypeError, gym.error.Error) as exc:
        parser.error(str(exc).splitlines()[0])
    args.out.mkdir(parents=True, exist_ok=True)

    if args.load is not None:
        model = MaskablePPO.load(args.load, env=env, device="cpu")
        seeds_file = args.load.parent / "trained_seeds.json"
        trained_on: set[int] = (
            set(json.loads(seeds_file.read_text())) if seeds_file.is_file() else set()
        )
        episodes = None
        log.info("evaluating %s (%d steps trained)", args.load, model.num_timesteps)
    else:
        settings = PPO_SETTINGS.get(args.env_id, PpoSettings())
        model = MaskablePPO(
            "MlpPolicy",
            training_env(lambda: gym.make(args.env_id, **options), settings),
            seed=args.seed,
            device="cpu",
            verbose=0,
            **{k: v for k, v in asdict(settings).items() if k not in WRAPPER_SETTINGS},
        )
        log.info("MaskablePPO settings: %s", settings)
        limit = TimeLimit(args.minutes * 60.0, args.out / "episodes.csv")
        log.info("training %s for %.1f min", args.env_id, args.minutes)
        model.learn(total_timesteps=10**9, callback=limit)
        trained_on = limit.trace_seeds
        episodes = len(limit.trace_seeds) or None
        model.save(args.out / "model.zip")
        (args.out / "trained_seeds.json").write_text(json.dumps(sorted(trained_on)))
        log.info(
            "trained %d steps in %.1f min; saved %s",
            model.num_timesteps,
            (time.monotonic() - limit.start) / 60.0,
            args.out / "model.zip",
        )
    trained = sorted(trained_on & set(seeds))
    if trained:
        parser.error(f"evaluation seeds {trained} were trained on; pick others (--eval-seeds)")

    setting = evaluation_setting(env.unwrapped, options)
    workload = setting.pop("workload")
    baselines = [name for name in args.baselines.split(",") if name]
    try:
        ppo = from_sb3(model, args.env_id, name="maskable-ppo", **options)
        results = run_grid(workload, [ppo, *baselines], seeds, **setting)
    except SimulationStalled as exc:  # the greedy policy leaves every job idle for good
        log.warning("greedy actions stall (%s); evaluating sampled actions instead", exc)
        ppo = from_sb3(model, args.env_id, deterministic=False, name="ppo-sampled", **options)
        results = run_grid(workload, [ppo, *baselines], seeds, **setting)
    rows = summarise(results)
    paired = paired_differences(results, 1 + len(baselines))
    report = {
        "env_id": args.env_id,
        "options": {k: repr(v) for k, v in options.items()},
        "minutes": args.minutes,
        "timesteps": model.num_timesteps,
        "episodes_trained": episodes,
        "model": str(args.load) if args.load is not None else None,
        "eval_workload": workload,
        "eval_options": setting,
        "eval_seeds": seeds,
        "results": {r.scheduler: {m: [r.mean[m], r.ci95[m]] for m in METRICS} for r in rows},
        "paired": paired,
    }
    (args.out / "eval.json").write_text(json.dumps(report, indent=2))
    print(f"{'scheduler':<14} {'avg JCT (s)':>22} {'avg slowdown':>18}")
    for r in rows:
        jct, slow = "avg_jct_s", "avg_slowdown"
        print(
            f"{r.scheduler:<14} {r.mean[jct]:>12,.1f} ± {r.ci95[jct]:>7,.1f} "
            f"{r.mean[slow]:>9.3f} ± {r.ci95[slow]:.3f}"
        )
    for baseline, diffs in paired.items():
        (jct, jct_ci), (slow, slow_ci) = diffs["avg_jct_s"], diffs["avg_slowdown"]
        print(
            f"{ppo.name} − {baseline}, paired over {len(seeds)} seeds (95 % CI): avg JCT "
            f"{jct:+,.1f} s [{jct - jct_ci:+,.1f}, {jct + jct_ci:+,.1f}], avg slowdown "
            f"{slow:+.3f} [{slow - slow_ci:+.3f}, {slow + slow_ci:+.3f}]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
