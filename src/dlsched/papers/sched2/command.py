"""``dlsched train sched2``: train SCED²'s DQN policy or SCED²-L (progress bar, CSV log,
checkpoint). The options are `Sched2RunArgs`', `DQNConfig`'s and `CemConfig`'s documented
fields (`dlsched.commands.config_options`)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping
from typing import Any

from rich.markup import escape

from dlsched.commands.common import err, metrics_line, one_line_errors, out, progress_bar
from dlsched.commands.config_options import Renamed, Section, train_command
from dlsched.commands.experiment import experiment_file
from dlsched.papers.sched2.config import CemConfig, DQNConfig, Sched2RunArgs
from dlsched.rl.run_options import RunOptions
from dlsched.workloads.traces.options import TraceOptions


@experiment_file("train", sub="sched2")
@train_command(
    Section(Sched2RunArgs),
    Section(DQNConfig, skip=("extra",), defaults={"episodes": None}),  # 100, --paper 2400
    Section(CemConfig, skip=("seed", "elite")),
    Section(TraceOptions),
    renamed=[Renamed("--minutes", "--max-minutes", min=0.01, max=1e6)],
)
def train_sched2_command(
    run: RunOptions, args: Sched2RunArgs, config: DQNConfig, cem: CemConfig, trace: TraceOptions
) -> None:
    """Train a SCED² policy (DQN, or SCED²-L with --method lookahead): OUT/policy.pt +
    OUT/card.json is the best by validation, OUT/train_log.csv a row per episode (iteration).
    On your trace (-w trace:PATH) with --split, episodes are windows of the train part and
    validation windows of the validation part."""
    from dlsched.papers.sched2.train import train_sched2, train_sched2_lookahead

    if args.paper:  # SCED²'s own method at its scale, on batched environments (paper.py)
        _train_paper(run, args, config, trace)
        return
    config = dataclasses.replace(config, episodes=config.episodes or 100)
    keys = ("workload", "num_jobs", "load", "one_gpu_frac", "servers", "log_csv")
    where: dict[str, Any] = {key: getattr(args, key) for key in keys}  # the traces and log
    where["trace_options"] = trace.given()
    if args.method == "lookahead":
        cem = dataclasses.replace(cem, seed=config.seed, elite=max(2, cem.population // 4))
        with one_line_errors(), progress_bar() as progress:
            path, best = train_sched2_lookahead(
                run,
                config=cem,
                command="dlsched " + " ".join(sys.argv[1:]),
                progress=_progress(progress, "sched2-L iterations", cem.iterations, _iteration),
                **where,
            )
    else:
        if args.teacher == "none":  # demonstrations need a teacher
            config = dataclasses.replace(config, demo_episodes=0, pretrain_steps=0)
        with one_line_errors(), progress_bar() as progress:
            path, best = train_sched2(
                run,
                config=config,
                order=args.window,
                teacher=None if args.teacher == "none" else args.teacher,
                progress=_progress(progress, "sched2 episodes", config.episodes, _episode),
                **where,
            )
    out.print(f"policy written to [bold]{escape(str(path))}[/] · validation {metrics_line(best)}")
    out.print(f"use it with: --scheduler sched2:{path}", markup=False, highlight=False)


def _train_paper(
    run: RunOptions, args: Sched2RunArgs, config: DQNConfig, trace: TraceOptions
) -> None:
    """``--paper``: `dlsched.papers.sched2.paper_command.train_paper_command`."""
    from dlsched.papers.sched2.paper_command import train_paper_command

    if trace.given():
        with one_line_errors():
            raise ValueError("--paper trains on the sched2 workload; trace options do not apply")
    budget_s = None if run.max_minutes is None else 60.0 * run.max_minutes
    train_paper_command(run.out, config.episodes or 2400, budget_s, config.seed, args.load,
                        args.device, args.num_envs, args.reward, args.replay_priority,
                        args.hold_mask, config.dueling, args.discount_time_s,
                        run.tensorboard, run.force, run.resume)  # fmt: skip


Row = Mapping[str, object]


def _progress(
    progress: object, label: str, total: int, describe: Callable[[Row], tuple[str, str]]
) -> Callable[[int, Row], None]:
    """A progress callback: the bar's description and, off a terminal, a plain line."""
    task = progress.add_task(label, total=total)  # type: ignore[attr-defined]

    def show(done: int, row: Row) -> None:
        short, line = describe(row)
        progress.update(task, completed=done, description=short)  # type: ignore[attr-defined]
        if not err.is_terminal:
            err.print(line, highlight=False)

    return show


def _f(row: Row, key: str) -> float:
    return float(str(row.get(key) or "nan"))


def _episode(row: Row) -> tuple[str, str]:
    evaluated = _f(row, "eval_effectiveness") == _f(row, "eval_effectiveness")
    short = f"ep {row['episode']} · ε {_f(row, 'epsilon'):.2f} · "
    short += f"train E {_f(row, 'train_effectiveness'):.3f}"
    short += f" · eval E {_f(row, 'eval_effectiveness'):.3f}" if evaluated else ""
    line = (
        f"episode {row['episode']}: steps {row['steps']}, eps {_f(row, 'epsilon'):.3f}, "
        f"train E {_f(row, 'train_effectiveness'):.4f}"
        + (f", eval E {_f(row, 'eval_effectiveness'):.4f}" if evaluated else "")
        + f", {_f(row, 'wall_s'):.0f} s"
    )  # no "eval E nan" between validations
    return short, line


def _iteration(row: Row) -> tuple[str, str]:
    short = f"it {row['iteration']} · validation {_f(row, 'validation'):.3f}"
    line = (
        f"iteration {row['iteration']}: train best {_f(row, 'train_best'):.4f}, "
        f"validation {_f(row, 'validation'):.4f} (JCT {_f(row, 'validation_avg_jct_s'):.0f} s, "
        f"makespan {_f(row, 'validation_makespan_s'):.0f} s, fragmentation "
        f"{_f(row, 'validation_avg_fragmentation'):.3f}), params [{row['params']}], "
        f"{_f(row, 'wall_s'):.0f} s"
    )
    return short, line
