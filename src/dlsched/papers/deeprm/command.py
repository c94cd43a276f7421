"""``dlsched train deeprm``: REINFORCE with per-timestep baselines on DeepRM's image state.

The options are `ReinforceConfig`'s and `DeepRMRunArgs`'s documented fields
(`dlsched.commands.config_options`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from dlsched.commands.common import one_line_errors, out, progress_bar
from dlsched.commands.config_options import Renamed, Section, train_command
from dlsched.commands.experiment import experiment_file
from dlsched.papers.deeprm.config import DeepRMRunArgs, ReinforceConfig
from dlsched.rl.run_options import RunOptions

if TYPE_CHECKING:
    from dlsched.papers.deeprm.train import TrainOutcome


@experiment_file(
    "train",
    sub="deeprm",
    unused="refuse",
    why="train deeprm trains on DeepRM's own jobsets; its image state cannot show another "
    "workload's jobs",
    accepts={"workload": "deeprm"},
)
@train_command(
    Section(ReinforceConfig, skip=("shape",)),
    Section(DeepRMRunArgs),
    renamed=[Renamed("--time-budget", "--max-minutes", factor=1 / 60, min=1.0, max=1e7)],
)
def train_deeprm_command(run: RunOptions, config: ReinforceConfig, args: DeepRMRunArgs) -> None:
    """Train DeepRM: OUT/policy.pt + OUT/card.json is the best policy by validation, OUT/last the
    last validated network, OUT/train_log.csv a row per iteration."""
    import torch

    from dlsched.papers.deeprm.state import DeepRMShape
    from dlsched.papers.deeprm.train import train_deeprm

    torch.set_num_threads(1)
    with one_line_errors():
        if args.fresh_jobsets and not args.paper:
            raise ValueError("--fresh-jobsets: only with --paper")
        config = _paper_config(config, args) if args.paper else config
    if config.loads:  # the first of several loads is the card's nominal one
        config = dataclasses.replace(config, load=config.loads[0])
    config.shape = DeepRMShape(ranked=args.ranked)
    label = ",".join(f"{x:g}" for x in config.loads) or f"{config.load:g}"
    with one_line_errors(), progress_bar(label="deeprm {task.description}") as progress:
        task = progress.add_task(f"load {label}", total=config.iterations)

        def advance(steps: int, row: Mapping[str, object]) -> None:
            reward = float(str(row.get("mean_reward") or "nan"))
            slow = float(str(row.get("mean_slowdown") or "nan"))
            progress.update(
                task, completed=steps, description=f"reward {reward:.1f} slowdown {slow:.3f}"
            )

        outcome = train_deeprm(
            config,
            run,
            validate_every=args.validate_every,
            validation_jobsets=args.validation_jobsets,
            progress=advance,
        )
    _print_outcome(outcome, label)


def _print_outcome(outcome: TrainOutcome, label: str) -> None:
    """The table of what the run reached."""
    plural = "" if outcome.iterations == 1 else "s"
    table = Table(title=f"deeprm · load {label} · {outcome.iterations} iteration{plural}")
    table.add_column("field")
    table.add_column("value", justify="right")
    table.add_row("best validation slowdown", f"{outcome.best_slowdown:.3f} ({outcome.best_mode})")
    table.add_row("at iteration", str(outcome.best_iteration))
    table.add_row("SJF on the slots", f"{outcome.sjf_slowdown:.3f}")
    table.add_row("wall time", f"{outcome.wall_s:.0f} s")
    table.add_row("policy", str(outcome.best_dir))
    out.print(table)


def _paper_config(config: ReinforceConfig, args: DeepRMRunArgs) -> ReinforceConfig:
    """``--paper``: `PaperConfig` with the options given, every action offered and the paper's
    loads unless ``--loads``; ValueError for an option outside DeepRM's method."""
    from dlsched.papers.deeprm.batched_env import resolve_device
    from dlsched.papers.deeprm.paper import PAPER_LOADS, PaperConfig

    outside = {"--ranked": args.ranked, "--pretrain-epochs": config.pretrain_epochs > 0}
    outside["--long-jobs"] = config.long_jobs > 0
    for name, given in outside.items():
        if given:
            raise ValueError(f"{name}: not part of DeepRM's method (--paper)")
    if args.init_from and not (Path(args.init_from) / "policy.pt").is_file():
        raise ValueError(f"--init-from {args.init_from}: no policy.pt in that folder")
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(ReinforceConfig)}
    fields.update(mask_invalid=False, loads=config.loads or PAPER_LOADS)
    device = resolve_device(args.device)
    return PaperConfig(
        **fields,
        device=device,
        baseline=args.baseline,
        init_from=args.init_from,
        fresh_jobsets=args.fresh_jobsets,
    )
