"""``dlsched train dl2``: supervised warm-up from a heuristic, then RL (DL2's actor-critic or
evolution strategies)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import TextColumn
from rich.table import Table

from dlsched.cli_args import (
    MAX_LOAD,
    MAX_SEED,
    MAX_SERVERS,
    MAX_STEPS,
    VARY_BOUNDS,
    parse_hidden,
    parse_option_value,
)
from dlsched.commands.common import one_line_errors, out, parse_options, progress_bar


def train_dl2_command(
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory (policy, card, log).")],
    workload: Annotated[str, typer.Option("--workload", "-w", help="Elastic workload.")] = "dl2",
    teacher: Annotated[
        str,
        typer.Option(
            help="Heuristic to imitate first (drf, fifo, srtf, tetris, optimus, …); none."
        ),
    ] = "drf",
    sl_steps: Annotated[
        int, typer.Option(min=0, max=MAX_STEPS, help="Supervised mini-batch updates.")
    ] = 2000,
    sl_episodes: Annotated[
        int,
        typer.Option(min=1, max=MAX_STEPS, help="Traces the teacher is replayed on for SL data."),
    ] = 4,
    rl_steps: Annotated[
        int,
        typer.Option(min=0, max=MAX_STEPS, help="RL updates (actor-critic) or iterations (es)."),
    ] = 500,
    rl_method: Annotated[
        str,
        typer.Option(
            help="actor-critic (DL2's, the paper's reward) or es (evolution strategies on the "
            "average JCT of whole training traces)."
        ),
    ] = "actor-critic",
    rl_eval_every: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_STEPS, help="RL updates between validations (--eval-every)."),
    ] = None,
    es_pairs: Annotated[
        int, typer.Option(min=1, max=1000, help="es: antithetic pairs per iteration.")
    ] = 6,
    es_traces: Annotated[
        int, typer.Option(min=1, max=1000, help="es: training traces per iteration.")
    ] = 1,
    es_sigma: Annotated[
        float, typer.Option(min=1e-6, max=10.0, help="es: std of the weight perturbations.")
    ] = 0.02,
    es_lr: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="es: Adam step size on the weights.")
    ] = 0.005,
    es_stall_probes: Annotated[
        int,
        typer.Option(
            min=0,
            max=1000,
            help="es: small-cluster (2-3 servers) training traces per iteration; a candidate "
            "that stalls one scores inf.",
        ),
    ] = 4,
    stall_probes: Annotated[
        int,
        typer.Option(
            min=0,
            max=10_000,
            help="Small-cluster (2-3 servers) traces run at every validation; a checkpoint that "
            "stalls one is never chosen over one that stalls none (0: off).",
        ),
    ] = 24,
    max_minutes: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=100_000.0,
            help="Wall-time budget: no new chunk of updates starts after this many minutes.",
        ),
    ] = None,
    init: Annotated[
        Path | None,
        typer.Option(help="Start from this policy checkpoint (same --J, --arch, --hidden)."),
    ] = None,
    tensorboard: Annotated[
        Path | None,
        typer.Option(
            help="Also write the log's rows as TensorBoard scalars here (extra: tensorboard)."
        ),
    ] = None,
    eval_every: Annotated[
        int,
        typer.Option(
            min=1, max=MAX_STEPS, help="Updates between validations, CSV rows and checkpoints."
        ),
    ] = 100,
    val_seeds: Annotated[str, typer.Option(help="Validation trace seeds (e.g. 201-203).")] = (
        "201-203"
    ),
    servers: Annotated[
        int | None, typer.Option(min=1, max=MAX_SERVERS, help="Cluster size in servers.")
    ] = None,
    load: Annotated[
        float | None, typer.Option(min=0.001, max=MAX_LOAD, help="Arrival-rate multiplier.")
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", "-o", help="Workload generator option KEY=VALUE (repeatable)."),
    ] = None,
    jobs_per_batch: Annotated[
        int, typer.Option("--J", min=1, max=1000, help="Job rows of the state.")
    ] = 40,
    arch: Annotated[str, typer.Option(help="Network: rows (shared per row) or mlp (DL2's).")] = (
        "rows"
    ),
    hidden: Annotated[str, typer.Option(help="Hidden layer sizes, comma-separated.")] = "64,64",
    no_value_net: Annotated[
        bool, typer.Option("--no-value-net", help="Ablation: moving-average baseline.")
    ] = False,
    no_exploration: Annotated[
        bool, typer.Option("--no-exploration", help="Ablation: no job-aware exploration.")
    ] = False,
    no_replay: Annotated[
        bool, typer.Option("--no-replay", help="Ablation: no experience replay.")
    ] = False,
    dagger: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of SL slots driven by the learner.")
    ] = 0.0,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of torch, NumPy and the training traces.")
    ] = 0,
    speed_model: Annotated[
        str,
        typer.Option(
            help="Training simulator's speeds: measured, or optimus (Optimus' model fitted to "
            "a few noisy measured samples: the OfflineRL baseline)."
        ),
    ] = "measured",
    fit_samples: Annotated[
        int,
        typer.Option(
            min=1, max=MAX_STEPS, help="With --speed-model optimus: observed configs per type."
        ),
    ] = 10,
    clusters: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="Simulated clusters training one global policy in RL (federated, A3C).",
        ),
    ] = 1,
    resume: Annotated[bool, typer.Option(help="Continue from OUT/last if it exists.")] = False,
    vary: Annotated[
        list[str] | None,
        typer.Option(
            help="Generator option drawn per training episode, KEY=V1,V2,… (repeatable), e.g. "
            "servers=8,13,20: one policy across settings; validation keeps the fixed ones."
        ),
    ] = None,
    paper: Annotated[
        bool,
        typer.Option(
            "--paper",
            help="DL2's own method and hyper-parameters (§4, §6.2): paper state, MLP 2x256, "
            "SL from --teacher, then actor-critic (--rl-steps updates, one per slot) in "
            "batched environments; --arch/--hidden/--J are ignored.",
        ),
    ] = False,
    device: Annotated[
        str, typer.Option(help="--paper: auto, cpu or cuda (networks and mini-batches).")
    ] = "auto",
    num_envs: Annotated[
        int, typer.Option(min=1, max=4096, help="--paper: episodes simulated at once.")
    ] = 16,
    critic_warmup: Annotated[
        int,
        typer.Option(
            min=0,
            max=MAX_STEPS,
            help="--paper: value-only updates before the policy learns (ours).",
        ),
    ] = 0,
    normalize_advantage: Annotated[
        bool,
        typer.Option(
            "--normalize-advantage", help="--paper: standardise advantages per mini-batch (ours)."
        ),
    ] = False,
) -> None:
    """Train DL2: imitate TEACHER, then improve by RL; the best policy goes to OUT."""
    import torch

    from dlsched.experiments.compare import parse_seeds
    from dlsched.papers.dl2.elastic import require_elastic
    from dlsched.papers.dl2.es import EsConfig
    from dlsched.papers.dl2.network import Dl2Config
    from dlsched.papers.dl2.offline_rl import SPEED_MODELS, FitSpec
    from dlsched.papers.dl2.train import LOG_FILE, TrainSpec, train_dl2
    from dlsched.rl.checkpoint import read_card

    with one_line_errors():
        torch.set_num_threads(1)
        sizes = parse_hidden(hidden)
        if speed_model not in SPEED_MODELS:
            raise ValueError(f"--speed-model {speed_model!r}: choose {' or '.join(SPEED_MODELS)}")
        if rl_method not in ("actor-critic", "es"):
            raise ValueError(f"--rl-method {rl_method!r}: choose actor-critic or es")
        if rl_method == "es" and clusters > 1:
            raise ValueError("--clusters: federated training is actor-critic only")
        options = parse_options(option)
        if servers is not None:
            options["servers"] = servers
        if load is not None:
            options["load"] = load
        require_elastic(workload, options)
        if paper:
            from dlsched.papers.dl2.paper_command import run_paper

            run_paper(out_dir, options, teacher, sl_episodes, sl_steps, rl_steps, eval_every,
                      parse_seeds(val_seeds, "--val-seeds"), seed, not no_value_net,
                      not no_exploration, not no_replay, device, num_envs, max_minutes,
                      init, resume, critic_warmup, normalize_advantage)  # fmt: skip
            return
        config = Dl2Config(
            J=jobs_per_batch,
            arch=arch,
            hidden=sizes,
            value_net=not no_value_net,
            exploration=not no_exploration,
            replay=not no_replay,
            dagger=dagger,
            seed=seed,
        )
        spec = TrainSpec(
            out=out_dir,
            workload=workload,
            workload_options=options,
            teacher=None if teacher.lower() == "none" else teacher,
            sl_episodes=sl_episodes,
            sl_steps=sl_steps if teacher.lower() != "none" else 0,
            rl_steps=rl_steps,
            eval_every=eval_every,
            val_seeds=parse_seeds(val_seeds, "--val-seeds"),
            config=config,
            resume=resume,
            speed_model=speed_model,
            fit=FitSpec(samples=fit_samples, seed=seed),
            clusters=clusters,
            vary=_parse_vary(vary),
            rl_method=rl_method,
            es=EsConfig(
                pairs=es_pairs,
                traces_per_iter=es_traces,
                sigma=es_sigma,
                lr=es_lr,
                probes=es_stall_probes,
            ),
            rl_eval_every=rl_eval_every,
            init=init,
            stall_probes=stall_probes,
            max_wall_s=None if max_minutes is None else 60.0 * max_minutes,
            tensorboard=tensorboard,
        )
        with progress_bar(TextColumn("{task.fields[val]}")) as progress:
            tasks = {
                "sl": progress.add_task(f"SL from {teacher}", total=max(spec.sl_steps, 1), val=""),
                "rl": progress.add_task("RL", total=max(spec.rl_steps, 1), val=""),
            }

            def report(phase: str, step: int, total: int, val: float | None) -> None:
                task = tasks.get(phase)
                if task is None:
                    return
                if val is None:
                    progress.update(task, completed=step)
                else:
                    progress.update(task, completed=step, val=f"val JCT {val:,.0f} s")

            best = train_dl2(spec, progress=report)
        card = read_card(best)
        table = Table(title=f"DL2 policy in {best}")
        table.add_column("field")
        table.add_column("value")
        table.add_row(
            "validation avg JCT (s)", f"{card.validation.get('avg_jct_s', float('nan')):,.0f}"
        )
        if "probes" in card.validation:
            table.add_row(
                "stall probes stalled",
                f"{card.validation['probe_stalls']:.0f} of {card.validation['probes']:.0f}",
            )
        table.add_row("validation seeds", ", ".join(map(str, card.seeds.get("validation", []))))
        table.add_row("steps (SL, RL)", f"{card.steps.get('sl', 0)}, {card.steps.get('rl', 0)}")
        table.add_row("log", str(best / LOG_FILE))
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
