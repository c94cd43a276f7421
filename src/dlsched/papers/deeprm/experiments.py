"""DeepRM's evaluation (DeepRM §4, Figs. 4–7) on held-out jobsets, in dlsched's Simulator.

Every run is one ``deeprm`` jobset (50 steps of arrivals, §4.1) with seed
``HELD_OUT_SEED_BASE + i`` (never used in training or validation), simulated with a scheduling
point at every time step (``interval_s = 1``, as DeepRM's agent acts every step) for every
scheduler:

* **Fig. 4** (``fig4.csv``, ``fig4.png``): average slowdown vs load for ``deeprm`` (the shipped
  default, one for every load), ``deeprm:paper`` (DeepRM's own method), ``sjf``, ``packer``,
  ``tetris-star`` and ``random``. The heuristics see every pending job; ``deeprm`` sees its
  ``M = 10`` slots — the ten shortest waiting jobs
  (`dlsched.papers.deeprm.state.DeepRMShape.ranked`, not the paper's arrival order) — and the
  backlog count; ``deeprm:paper`` the paper's 10 arrival-order slots.
* **Fig. 5** (``fig5.csv``, ``fig5.png``): average slowdown and average completion time at load
  1.3 for the heuristics, DeepRM trained for slowdown (``deeprm`` and ``deeprm:paper``) and
  DeepRM trained for completion time (reward ``−|J|``, the paper's state, SJF imitation then
  REINFORCE — not the paper's method, labelled so; trained here, briefly in the reduced size).
* **Fig. 6** (``fig6.csv``, ``fig6.png``): the learning curve of ``deeprm:paper`` (DeepRM's
  method) from its ``train_log.csv`` (mean slowdown of the sampled episodes and validation
  slowdown per iteration, over its training loads and jobset lengths; mean and max total
  reward per iteration).
* **Fig. 7** (``fig7.csv``, ``fig7.png``): at load 1.1, the share of scheduling points at which
  DeepRM withholds a job that fits in the free resources — any pending job, and only the jobs in
  its ``M`` slots (those it can choose) — the lengths of the slot jobs it withholds, and the
  slowdown of short and long jobs under DeepRM and Tetris★ (work-conserving: share 0).

Sizes: the reduced default is `REDUCED` (6 loads × 10 jobsets, a 15-iteration completion-time
policy); ``full=True`` is `FULL` (loads 0.1–1.9 × 100 jobsets, as the paper, and a 300-iteration
completion-time policy).
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.ticker import FuncFormatter

from dlsched.core import ClusterView, Decision
from dlsched.csv_rows import write_csv
from dlsched.experiments.compare import mean_ci95
from dlsched.experiments.plots import plt
from dlsched.papers.deeprm.algorithm import HELD_OUT_SEED_BASE
from dlsched.papers.deeprm.policy import DeepRMScheduler
from dlsched.runner import simulate
from dlsched.schedulers.base import Scheduler, WrappingScheduler
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim import Result
from dlsched.workloads.deeprm import LONG_STEPS, SHORT_STEPS, make_deeprm

log = logging.getLogger(__name__)

SCHEDULERS = ("deeprm", "deeprm:paper", "sjf", "packer", "tetris-star", "random")
STEP_INTERVAL_S = 1.0
LABELS = {
    "deeprm": "deeprm (dlsched's: ranked view, imitation of a withholding rule + REINFORCE)",
    "deeprm:paper": "deeprm:paper (DeepRM's method: paper state, REINFORCE from scratch)",
}
"""How each DeepRM row was trained (tables and plots); the paper's numbers go only beside
``deeprm:paper``."""
PAPER_WITHHOLDING_SHARE = 0.234
"""DeepRM §4.3: at load 110 % DeepRM was not work-conserving in 23.4 % of time steps."""


def label(name: str) -> str:
    """A scheduler's row label (`LABELS`, else its name)."""
    return LABELS.get(name, name)


@dataclass(frozen=True)
class Size:
    """How big the experiment is.

    Attributes:
        loads: Fig. 4's loads.
        jobsets: held-out jobsets per point.
        completion_iterations: REINFORCE iterations of Fig. 5's completion-time policy.
        completion_jobsets: its training jobsets.
        completion_episodes: its episodes per jobset.
    """

    loads: tuple[float, ...]
    jobsets: int
    completion_iterations: int
    completion_jobsets: int
    completion_episodes: int
    label: str


REDUCED = Size((0.3, 0.7, 1.1, 1.3, 1.5, 1.9), 10, 15, 20, 10, "reduced")
FULL = Size(tuple(round(0.1 + 0.2 * i, 1) for i in range(10)), 100, 300, 100, 20, "full")


def _run(load: float, seed: int, scheduler: str | Scheduler) -> Result:
    workload = make_deeprm(seed, load=load, horizon_steps=50)
    return simulate(workload, scheduler, seed, interval_s=STEP_INTERVAL_S)


def _seeds(size: Size) -> list[int]:
    return [HELD_OUT_SEED_BASE + i for i in range(size.jobsets)]


# -- Fig. 4 ----------------------------------------------------------------------------------


def fig4(out: Path, size: Size) -> tuple[list[Path], dict[tuple[float, str], tuple[float, float]]]:
    """Average slowdown vs load; returns files and ``(load, scheduler) → (mean, ci95)``."""
    rows = []
    for load in size.loads:
        for seed in _seeds(size):
            for name in SCHEDULERS:
                s = _run(load, seed, name).summary()
                rows.append(
                    {
                        "load": load,
                        "scheduler": name,
                        "seed": seed,
                        "avg_slowdown": s["avg_slowdown"],
                        "avg_jct_s": s["avg_jct_s"],
                        "unfinished": s["jobs"] - s["finished"],
                    }
                )
    means = {
        (load, name): mean_ci95(
            [r["avg_slowdown"] for r in rows if r["load"] == load and r["scheduler"] == name]
        )
        for load in size.loads
        for name in SCHEDULERS
    }
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in SCHEDULERS:
        ys = np.array([means[(load, name)] for load in size.loads])
        ax.errorbar(
            np.array(size.loads) * 100, ys[:, 0], yerr=ys[:, 1], label=label(name), marker="o"
        )
    ax.set_xlabel("average cluster load (%)")
    ax.set_ylabel("average job slowdown")
    ax.set_title(f"DeepRM Fig. 4 ({size.jobsets} held-out jobsets per point)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "fig4.png", dpi=120)
    plt.close(fig)
    return [write_csv(out / "fig4.csv", rows), out / "fig4.png"], means


# -- Fig. 5 ----------------------------------------------------------------------------------


def train_completion_policy(out: Path, size: Size) -> Path:
    """Train DeepRM for average completion time (reward −|J|) at load 1.3; its checkpoint."""
    from dlsched.papers.deeprm.algorithm import ReinforceConfig
    from dlsched.papers.deeprm.train import train_deeprm
    from dlsched.rl.run_options import RunOptions

    config = ReinforceConfig(
        load=1.3,
        objective="completion",
        jobsets=size.completion_jobsets,
        episodes=size.completion_episodes,
        iterations=size.completion_iterations,
        pretrain_epochs=40,
        pretrain_lr=3e-3,
        workers=2 if size.label == "full" else 1,
        seed=7,
    )
    run = RunOptions(out / "completion_policy", force=True)  # a rerun replaces its own policy
    outcome = train_deeprm(config, run, validate_every=5)
    return outcome.best_dir


def fig5(out: Path, size: Size) -> tuple[list[Path], list[dict[str, Any]]]:
    """Slowdown and completion time at load 1.3 for each scheduler and DeepRM objective."""
    policy = train_completion_policy(out, size)
    entries: list[tuple[str, str]] = [
        ("deeprm (slowdown; dlsched's)", "deeprm"),
        ("deeprm (completion; SJF imitation + REINFORCE, paper state)", f"deeprm:{policy}"),
        ("deeprm:paper (slowdown; DeepRM's method)", "deeprm:paper"),
        *((n, n) for n in SCHEDULERS if not n.startswith("deeprm")),
    ]
    rows = []
    for label, spec in entries:
        runs = [_run(1.3, seed, spec).summary() for seed in _seeds(size)]
        sd = mean_ci95([r["avg_slowdown"] for r in runs])
        ct = mean_ci95([r["avg_jct_s"] for r in runs])
        rows.append(
            {
                "scheduler": label,
                "avg_slowdown": sd[0],
                "slowdown_ci95": sd[1],
                "avg_completion_steps": ct[0],
                "completion_ci95": ct[1],
            }
        )
    plot_fig5(rows, out / "fig5.png", len(_seeds(size)))
    return [write_csv(out / "fig5.csv", rows), out / "fig5.png"], rows


def plot_fig5(rows: Sequence[dict[str, Any]], path: Path, jobsets: int) -> None:
    """Fig. 5's two bar charts (slowdown; completion time in steps), means ± 95 % CI."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    labels = [r["scheduler"] for r in rows]
    for ax, key, ci, label in zip(
        axes,
        ("avg_slowdown", "avg_completion_steps"),
        ("slowdown_ci95", "completion_ci95"),
        ("average job slowdown", "average job completion time (steps)"),
        strict=True,
    ):
        ax.bar(range(len(rows)), [r[key] for r in rows], yerr=[r[ci] for r in rows], capsize=3)
        ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right")
        ax.set_ylabel(label)
        ax.set_title(f"load 130 %, mean ± 95 % CI over {jobsets} jobsets", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- Fig. 6 ----------------------------------------------------------------------------------


FIG6_COLUMNS = ("iteration", "mean_slowdown", "val_sample_slowdown", "val_greedy_slowdown",
                "mean_reward", "max_reward")  # fmt: skip
"""The columns of ``fig6.csv``: the plotted ones of the policy's ``train_log.csv``."""


def fig6(out: Path, references: dict[str, float]) -> list[Path]:
    """Learning curve of ``deeprm:paper`` (DeepRM's method; its ``train_log.csv``): the figure
    and ``fig6.csv``, its plotted columns."""
    from dlsched.papers.deeprm.policy import PAPER_POLICY
    from dlsched.rl.files import LOG_FILE

    path = PAPER_POLICY / LOG_FILE
    if not path.is_file():
        log.warning("no %s: Fig. 6 skipped", path)
        return []
    with path.open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["mean_slowdown"]]  # not the pre-training row
    it = np.array([int(r["iteration"]) for r in rows])
    fig, (ax_s, ax_mean, ax_max) = plt.subplots(1, 3, figsize=(15, 4))
    ax_s.plot(it, [float(r["mean_slowdown"]) for r in rows], label="deeprm (sampled episodes)")
    for column, what in (("val_sample_slowdown", "sampled"), ("val_greedy_slowdown", "arg-max")):
        val = [(int(r["iteration"]), float(r[column])) for r in rows if r.get(column)]
        if val:
            ax_s.plot(*zip(*val, strict=True), marker="o", label=f"deeprm (validation, {what})")
    for k, (name, value) in enumerate(references.items()):
        ax_s.axhline(
            value, linestyle="--", linewidth=1, color=f"C{k + 2}", label=f"{name} (held-out)"
        )
    ax_s.set_xlabel("iteration")
    ax_s.set_ylabel("average slowdown (log scale)")
    ax_s.set_yscale("log")  # arg-max validation of an early policy is 10x the sampled one
    ax_s.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax_s.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax_s.legend(fontsize=7)
    for ax, column, what in ((ax_mean, "mean_reward", "mean"), (ax_max, "max_reward", "max")):
        # one panel each: the best episode's reward is on another scale than the mean's
        ax.plot(it, [float(r[column]) for r in rows], color="C1" if what == "max" else "C0")
        ax.set_title(f"{what} over the iteration's episodes of −Σ job slowdowns", fontsize=9)
        ax.set_xlabel("iteration")
        ax.set_ylabel(f"{what} total reward per episode")
    fig.suptitle("DeepRM Fig. 6: learning curve of deeprm:paper (DeepRM's method)")
    fig.tight_layout()
    fig.savefig(out / "fig6.png", dpi=120)
    plt.close(fig)
    table = [{c: r.get(c, "") for c in FIG6_COLUMNS} for r in rows]
    return [write_csv(out / "fig6.csv", table), out / "fig6.png"]


def fig6_lines(out: Path) -> list[str]:
    """Fig. 6's Markdown lines from ``fig6.csv``: first, best and last validation."""
    path = out / "fig6.csv"
    if not path.is_file():
        return ["No learning curve shipped: Fig. 6 skipped."]
    with path.open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["val_sample_slowdown"]]
    if not rows:
        return ["The learning curve has no validation rows."]
    value = {int(r["iteration"]): float(r["val_sample_slowdown"]) for r in rows}
    best = min(value, key=value.__getitem__)
    first, last = min(value), max(value)
    lines = [
        f"Validation slowdown of `deeprm:paper` (sampled actions, its training loads): "
        f"{value[first]:.2f} at iteration {first}, lowest {value[best]:.2f} at iteration "
        f"{best}, {value[last]:.2f} at the last ({last}); `fig6.csv` has every plotted column "
        "(sampled episodes, arg-max validation, mean and max reward per iteration)."
    ]
    if value[last] > value[best]:
        lines.append(
            f"The validation slowdown rose by {value[last] - value[best]:.2f} after its lowest "
            "point: training past it made the policy worse on these jobsets; the shipped "
            "policy is the one kept by validation (its card), not the last network."
        )
    with path.open() as fh:
        rewards = [r for r in csv.DictReader(fh) if r["mean_reward"]]
    for column, what in (("mean_reward", "Mean"), ("max_reward", "Max")):
        first_r, last_r = float(rewards[0][column]), float(rewards[-1][column])
        lines.append(
            f"{what} total reward per episode (its own panel): {first_r:.1f} at iteration "
            f"{rewards[0]['iteration']}, {last_r:.1f} at iteration {rewards[-1]['iteration']}."
        )
    return lines


# -- Fig. 7 ----------------------------------------------------------------------------------


class WithholdingProbe(WrappingScheduler):
    """Wraps a scheduler and records, at each scheduling point, the pending jobs that fit in the
    free resources left by its decision (jobs it withholds although they fit)."""

    def __init__(self, inner: Scheduler) -> None:
        super().__init__(inner)
        self.points = 0
        self.withholding_points = 0
        self.withheld_lengths: list[float] = []
        self.visible_points = 0
        self.visible_lengths: list[float] = []

    def decide(self, view: ClusterView) -> Decision:
        decision = self.inner.decide(view)
        free = np.asarray(view.cluster.total.as_tuple()) - np.asarray(
            view.cluster.used_total().as_tuple()
        )
        for run in view.pending:
            if run.job_id in decision.targets:
                free -= np.asarray(run.spec.demand(run.spec.num_workers).as_tuple())
        if view.pending:
            self.points += 1
            withheld = [
                r.spec.total_work
                for r in view.pending
                if r.job_id not in decision.targets
                and np.all(np.asarray(r.spec.demand(r.spec.num_workers).as_tuple()) <= free + 1e-9)
            ]
            if withheld:
                self.withholding_points += 1
                self.withheld_lengths.extend(withheld)
            if isinstance(self.inner, DeepRMScheduler):
                # only the jobs in DeepRM's M slots (what it can choose)
                slots = {j for j in self.inner.deeprm_encoder.slots if j is not None}
                seen = [
                    r.spec.total_work
                    for r in view.pending
                    if r.job_id in slots
                    and np.all(
                        np.asarray(r.spec.demand(r.spec.num_workers).as_tuple()) <= free + 1e-9
                    )
                ]
                if seen:
                    self.visible_points += 1
                    self.visible_lengths.extend(seen)
        return decision


def fig7(out: Path, size: Size, load: float = 1.1) -> tuple[list[Path], dict[str, float]]:
    """Withholding statistics of DeepRM vs Tetris★ at ``load``."""
    stats: dict[str, float] = {}
    ci: dict[tuple[str, str], tuple[float, float]] = {}
    rows = []
    lengths: dict[str, list[float]] = {}
    for name in ("deeprm", "deeprm:paper", "tetris-star"):
        probe = WithholdingProbe(make_scheduler(name))
        by_class: dict[str, list[float]] = {"short": [], "long": []}
        for seed in _seeds(size):
            result = _run(load, seed, probe)
            for rec in result.records:
                by_class[rec.model].append(rec.slowdown)
        share = probe.withholding_points / max(1, probe.points)
        lengths[name] = probe.withheld_lengths
        stats[f"{name}_withholding_share"] = share
        if name.startswith("deeprm"):
            stats[f"{name}_withholding_share_slots_only"] = probe.visible_points / max(
                1, probe.points
            )
            lengths[f"{name}_slots"] = probe.visible_lengths
        for cls, values in by_class.items():
            stats[f"{name}_{cls}_slowdown"] = float(np.mean(values)) if values else float("nan")
            ci[(name, cls)] = mean_ci95(values)
        rows.append(
            {
                "scheduler": label(name),
                "load": load,
                "points_with_pending": probe.points,
                "withholding_share": share,
                "withheld_jobs": len(probe.withheld_lengths),
                "withheld_mean_length_steps": (
                    float(np.mean(probe.withheld_lengths)) if probe.withheld_lengths else 0.0
                ),
                "short_slowdown": stats[f"{name}_short_slowdown"],
                "long_slowdown": stats[f"{name}_long_slowdown"],
            }
        )
    fig, (ax_h, ax_b) = plt.subplots(1, 2, figsize=(10, 4))
    ax_h.hist(
        [lengths["deeprm:paper_slots"], lengths["deeprm_slots"]],
        bins=np.arange(0.5, 16.5, 1.0),
        label=["deeprm:paper", "deeprm"],
    )
    ax_h.set_xlabel("length of the withheld job (steps)")
    ax_h.set_ylabel("jobs withheld although they fit (all points)")
    ax_h.set_title("slot jobs DeepRM leaves waiting", fontsize=11)
    ax_h.legend()
    x = np.arange(2)
    for k, name in enumerate(("deeprm:paper", "deeprm", "tetris-star")):
        mean_ci = [ci[(name, cls)] for cls in ("short", "long")]
        ax_b.bar(x + 0.27 * k, [m for m, _ in mean_ci], width=0.27, label=name,
                 yerr=[h for _, h in mean_ci], capsize=3)  # fmt: skip
    short, long_ = (f"{lo}–{hi} steps" for lo, hi in (SHORT_STEPS, LONG_STEPS))
    ax_b.set_xticks(x + 0.27, [f"short jobs ({short})", f"long jobs ({long_})"])
    ax_b.set_ylabel("average slowdown (mean ± 95 % CI over jobs)")
    ax_b.set_title("slowdown by job length", fontsize=11)
    ax_b.legend()
    fig.suptitle(f"DeepRM Fig. 7: withholding at load {load:.0%}, {len(_seeds(size))} jobsets")
    fig.tight_layout()
    fig.savefig(out / "fig7.png", dpi=120)
    plt.close(fig)
    return [write_csv(out / "fig7.csv", rows), out / "fig7.png"], stats


def fig7_lines(stats: dict[str, float]) -> list[str]:
    """Fig. 7's Markdown lines; the paper's 23.4 % only beside ``deeprm:paper``'s share."""
    lines = []
    for key, value in stats.items():
        paper = ""
        if key == "deeprm:paper_withholding_share":
            paper = f" (paper: {PAPER_WITHHOLDING_SHARE:.3f} of time steps)"
        lines.append(f"- {key}: {value:.3f}{paper}")
    return lines


# -- all -------------------------------------------------------------------------------------


def run(out_dir: Path, *, full: bool = False) -> list[Path]:
    """Figs. 4–7 into ``out_dir`` (see the module docstring); returns the files written."""
    size = FULL if full else REDUCED
    out_dir.mkdir(parents=True, exist_ok=True)
    paths, means = fig4(out_dir, size)
    p5, rows5 = fig5(out_dir, size)
    p6 = fig6(out_dir, {})  # validation spans every load: no single held-out reference
    p7, stats7 = fig7(out_dir, size)
    paths += p5 + p6 + p7
    lines = [
        "# DeepRM (Mao et al., HotNets 2016): Figs. 4–7",
        "",
        f"Size: **{size.label}**"
        + (
            " (reduced default: 6 loads × 10 held-out jobsets, a 15-iteration completion-time "
            "policy; `--full` runs loads 10–190 % × 100 jobsets as the paper)."
            if not full
            else " (the paper's: 100 held-out jobsets per load)."
        ),
        "Each run: one `deeprm` jobset of 50 steps of arrivals, seeds from "
        f"{HELD_OUT_SEED_BASE}, a scheduling point every step.",
        "",
        "## Fig. 4: average slowdown (mean ± 95 % CI)",
        "",
        "Rows: "
        + "; ".join(f"`{n}` = {LABELS[n]}" for n in ("deeprm", "deeprm:paper"))
        + ". The paper's Fig. 4 has no printed numbers; its claim (DeepRM ≤ Tetris★ at high "
        "load) is a target for `deeprm:paper` only.",
        "",
        "| load | " + " | ".join(SCHEDULERS) + " |",
        "| --- | " + " | ".join("---" for _ in SCHEDULERS) + " |",
    ]
    for load in size.loads:
        cells = [f"{means[(load, n)][0]:.3f} ± {means[(load, n)][1]:.3f}" for n in SCHEDULERS]
        lines.append(f"| {load:.0%} | " + " | ".join(cells) + " |")
    lines += ["", "## Fig. 5: load 130 %", "", "| scheduler | slowdown | completion (steps) |"]
    lines.append("| --- | --- | --- |")
    for r in rows5:
        lines.append(
            f"| {r['scheduler']} | {r['avg_slowdown']:.3f} | {r['avg_completion_steps']:.2f} |"
        )
    lines += ["", "## Fig. 6: learning curve", "", *fig6_lines(out_dir)]
    lines += ["", "## Fig. 7: withholding at load 110 %", ""]
    lines += fig7_lines(stats7)
    lines.append("")
    readme = out_dir / "README.md"
    readme.write_text("\n".join(lines), encoding="utf-8")
    return [*paths, readme]
