"""``dlsched train dl2``: supervised warm-up from a heuristic, then RL (DL2's actor-critic or
evolution strategies).

The options are `TrainSpec`'s, `Dl2Config`'s, `EsConfig`'s (``--es-…``), `FitSpec`'s
(``--fit-…``) and `Dl2RunArgs`' documented fields (`dlsched.commands.config_options`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from rich.progress import TextColumn
from rich.table import Table

from dlsched.cli_args import VARY_BOUNDS, parse_option_value
from dlsched.commands.common import ProgressBar, one_line_errors, out, parse_options, progress_bar
from dlsched.commands.config_options import Section, train_command
from dlsched.commands.experiment import experiment_file
from dlsched.papers.dl2.config import Dl2Config, Dl2RunArgs, EsConfig, FitSpec, TrainSpec
from dlsched.rl.run_options import RunOptions
from dlsched.workloads.traces.options import TraceOptions

NOT_OPTIONS = ("workload_options", "validation_options", "config", "fit", "vary", "es")
"""`TrainSpec` fields set from other options (or sections of their own)."""


@experiment_file("train", sub="dl2")
@train_command(
    Section(TrainSpec, skip=NOT_OPTIONS, defaults={"stall_probes": 24}),
    Section(Dl2Config, defaults={"hidden": (64, 64)}),
    Section(
        EsConfig,
        prefix="es_",
        skip=("workload", "workload_options", "vary"),
        defaults={"probes": 4},
    ),
    Section(FitSpec, prefix="fit_", skip=("seed",)),
    Section(Dl2RunArgs),
    Section(TraceOptions),
)
def train_dl2_command(
    run: RunOptions,
    spec: TrainSpec,
    config: Dl2Config,
    es: EsConfig,
    fit: FitSpec,
    args: Dl2RunArgs,
    trace: TraceOptions,
) -> None:
    """Train DL2: imitate TEACHER, then improve by RL; the best policy goes to OUT. On your
    trace (-w trace:PATH, with elastic jobs) with --split, training traces are its train part
    and validation its validation part (the card records both)."""
    import torch

    from dlsched.papers.dl2.train import train_dl2
    from dlsched.rl.checkpoint import read_card
    from dlsched.rl.files import LOG_FILE

    with one_line_errors():
        torch.set_num_threads(1)
        if spec.rl_method == "es" and spec.clusters > 1:
            raise ValueError("--clusters: federated training is actor-critic only")
        options = _generator_options(spec.workload, args, trace)
        if args.paper:  # DL2's own preset on batched environments (its own run, paper.py)
            _run_paper(run, spec, config, args, options)
            return
        split = options.get("split") is not None  # your trace's parts: train, validation
        spec = dataclasses.replace(
            spec,
            workload_options={**options, "part": "train"} if split else options,
            validation_options={**options, "part": "validation"} if split else None,
            sl_steps=spec.sl_steps if spec.teacher is not None else 0,
            config=config,
            fit=dataclasses.replace(fit, seed=config.seed),
            vary=_parse_vary(args.vary),
            es=es,
        )
        with progress_bar(TextColumn("{task.fields[val]}")) as progress:
            best = train_dl2(spec, run, progress=_progress(progress, spec))
        _print_summary(best, LOG_FILE, read_card(best))


def _generator_options(workload: str, args: Dl2RunArgs, trace: TraceOptions) -> dict[str, Any]:
    """The workload generator's options (-o, --servers, --load, your trace's); ValueError for
    trace options with --paper or on another workload, or a workload without elastic jobs."""
    from dlsched.papers.dl2.elastic import require_elastic

    options = parse_options(args.option)
    options.update(
        {k: v for k, v in (("servers", args.servers), ("load", args.load)) if v is not None}
    )
    if args.paper and trace.given():
        raise ValueError("--paper trains on the dl2 workload; trace options do not apply")
    options.update(_trace_options(workload, trace))
    require_elastic(workload, options)
    return options


def _trace_options(workload: str, trace: TraceOptions) -> dict[str, Any]:
    """The trace options given, as generator options; ValueError for a workload that is no
    trace of yours, or a --part (training and validation take their own parts)."""
    given = trace.given()
    if given and not workload.startswith("trace:"):
        flag = "--" + next(iter(given)).replace("_", "-")
        raise ValueError(f"{flag} applies to your own trace (-w trace:PATH), not {workload}")
    if "part" in given:
        raise ValueError(
            "--part: training takes the train part of --split and validation its validation "
            "part; give --split alone"
        )
    return given


def _progress(
    progress: ProgressBar, spec: TrainSpec
) -> Callable[[int, Mapping[str, object]], None]:
    """A bar per phase (SL, RL), advanced by each log row, with its validation JCT."""
    teacher = spec.teacher or "none"
    tasks = {
        "sl": progress.add_task(f"SL from {teacher}", total=max(spec.sl_steps, 1), val=""),
        "rl": progress.add_task("RL", total=max(spec.rl_steps, 1), val=""),
    }

    def report(done: int, row: Mapping[str, object]) -> None:
        task = tasks.get(str(row.get("phase")))
        if task is not None:
            val = float(str(row.get("val_avg_jct_s") or "nan"))
            progress.update(task, completed=int(str(row["step"])), val=f"val JCT {val:,.0f} s")

    return report


def _run_paper(
    run: RunOptions, spec: TrainSpec, config: Dl2Config, args: Dl2RunArgs, options: dict[str, Any]
) -> None:
    """``--paper``: `dlsched.papers.dl2.paper_command.run_paper` with these options."""
    from dlsched.papers.dl2.paper_command import run_paper

    run_paper(run, options, spec.teacher or "none", spec.sl_episodes, spec.sl_steps,
              spec.rl_steps, spec.eval_every, spec.val_seeds, config.seed, config.value_net,
              config.exploration, config.replay, args.device, args.num_envs, spec.init,
              args.critic_warmup)  # fmt: skip


def _print_summary(best: object, log_file: str, card: object) -> None:
    """The table of the kept policy: validation JCT, stalls, seeds, steps, log."""
    validation = getattr(card, "validation", {})
    table = Table(title=f"DL2 policy in {best}")
    table.add_column("field")
    table.add_column("value")
    table.add_row("validation avg JCT (s)", f"{validation.get('avg_jct_s', float('nan')):,.0f}")
    if "probes" in validation:
        stalled = f"{validation['probe_stalls']:.0f} of {validation['probes']:.0f}"
        table.add_row("stall probes stalled", stalled)
    seeds = getattr(card, "seeds", {}).get("validation", [])
    table.add_row("validation seeds", ", ".join(map(str, seeds)))
    steps = getattr(card, "steps", {})
    table.add_row("steps (SL, RL)", f"{steps.get('sl', 0)}, {steps.get('rl', 0)}")
    table.add_row("log", f"{best}/{log_file}")
    out.print(table)
    out.print(f"use it with: --scheduler dl2:{best}")


def _parse_vary(items: list[str] | None) -> dict[str, tuple[object, ...]]:
    """``["servers=8,13"]`` → ``{"servers": (8, 13)}`` (each value typed and bounded as an ``-o``
    value, `dlsched.cli_args.parse_option_value`; the generator refuses unknown keys)."""
    vary: dict[str, tuple[object, ...]] = {}
    for item in items or []:
        key, sep, values = item.partition("=")
        if not sep or not key or not values:
            raise ValueError(f"--vary {item!r}: expected KEY=V1,V2,…")
        name = key.replace("-", "_")
        vary[name] = tuple(
            parse_option_value(name, v, "--vary", VARY_BOUNDS) for v in values.split(",")
        )
    return vary
