"""Figures (PNG) and the Markdown report of ``dlsched reproduce dl2``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dlsched.experiments.compare import mean_ci95
from dlsched.experiments.plots import plt
from dlsched.papers.dl2.experiments_training import SEEN_TYPES
from dlsched.papers.dl2.scheduler import PAPER_METHOD, how_trained

if TYPE_CHECKING:
    from dlsched.papers.dl2.experiments_training import Size, TrainingResults

Rows = Sequence[dict[str, Any]]
H = 3600.0


def means(rows: Rows, key: str, **match: Any) -> tuple[float, float]:
    """Mean and 95 % CI half-width of ``key`` over the rows matching ``match``."""
    return mean_ci95([r[key] for r in rows if all(r[k] == v for k, v in match.items())])


def vs_drf(f9: Rows) -> list[str]:
    """One line per DL2 row of Fig. 9: its change against DRF; the paper's −44.1 % is printed
    only beside the policy trained by the paper's method (`PAPER_METHOD`)."""
    drf = means(f9, "avg_jct_s", scheduler="drf")[0]
    lines = []
    for name in ("dl2", PAPER_METHOD):
        if any(r["scheduler"] == name for r in f9):
            jct = means(f9, "avg_jct_s", scheduler=name)[0]
            paper = " (paper −44.1 %)" if name == PAPER_METHOD else " (not the paper's method)"
            lines.append(f"- {name} vs DRF: {100 * (jct / drf - 1):+.1f} %{paper}.")
    return lines


def _unique(rows: Rows, key: str) -> list[Any]:
    return list(dict.fromkeys(r[key] for r in rows))


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _curve_plot(ax: Any, rows: Rows, runs: Sequence[str]) -> None:
    for run in runs:
        pts = [(r["step"], r["val_avg_jct_s"] / H) for r in rows if r["run"] == run]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=run)
    ax.set_xlabel("training step (SL mini-batch or RL update)")
    ax.set_ylabel("validation avg. JCT (h)")


def write_figures(
    out: Path, size: Size, f9: Rows, f13: Rows, f14: Rows, f17: Rows, trained: TrainingResults
) -> list[Path]:
    """One PNG per figure and table, in the page's order; returns the paths."""
    return [
        _fig9(out, size, f9),
        _fig10(out, size, trained),
        _table2(out, trained),
        _sweep(out, f13, "noise", "speed variation (relative std)", "fig13_speed_variation"),
        _sweep(out, f14, "error", "epoch-estimate error", "fig14_epoch_error"),
        _fig15(out, trained),
        _fig16(out, trained),
        _fig17(out, f17),
    ]


def _fig9(out: Path, size: Size, f9: Rows) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    names = _unique(f9, "scheduler")
    stats = np.array([means(f9, "avg_jct_s", scheduler=n) for n in names]) / H
    ax.bar(names, stats[:, 0], yerr=stats[:, 1], capsize=4)
    ax.set_ylabel("avg. JCT (h)")
    ax.set_title(f"DL2 Fig. 9: {len(size.fig9_seeds)} held-out traces")
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    return _save(fig, out / "fig9_jct.png")


def _fig10(out: Path, size: Size, trained: TrainingResults) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    _curve_plot(ax, trained.fig10, ["SL only", "RL only", "SL then RL"])
    ax.axhline(trained.drf_val_jct_s / H, color="k", ls="--", label="DRF")
    ax.axvline(size.train.sl_steps, color="grey", lw=0.6)
    ax.set_title("DL2 Fig. 10: training progress")
    ax.legend()
    return _save(fig, out / "fig10_training.png")


def _table2(out: Path, trained: TrainingResults) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    variants = [r["variant"] for r in trained.table2]
    ax.bar(variants, [r["final_val_avg_jct_s"] / H for r in trained.table2])
    ax.axhline(trained.table2[0]["sl_val_avg_jct_s"] / H, color="grey", ls=":", label="SL start")
    ax.set_ylabel("validation avg. JCT after RL (h)")
    ax.set_title("DL2 Table 2: ablations")
    ax.legend()
    plt.setp(ax.get_xticklabels(), rotation=15, ha="right")
    return _save(fig, out / "table2_ablations.png")


def _sweep(out: Path, rows: Rows, key: str, xlabel: str, name: str) -> Path:
    """Fig. 13 or 14 (``name`` is ``figNN_…``): each scheduler's JCT against ``key``."""
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = _unique(rows, key)
    for sched in _unique(rows, "scheduler"):
        st = np.array([means(rows, "avg_jct_s", **{key: x, "scheduler": sched}) for x in xs])
        ax.errorbar(xs, st[:, 0] / H, yerr=st[:, 1] / H, marker="o", label=sched)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("avg. JCT (h)")
    ax.set_title(f"DL2 Fig. {name.removeprefix('fig')[:2]}")
    ax.legend()
    return _save(fig, out / f"{name}.png")


def _fig15(out: Path, trained: TrainingResults) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    _curve_plot(ax, trained.fig15, _unique(trained.fig15, "run"))
    switch = max(r["step"] for r in trained.fig15 if r["types_in_training"] == 6)
    ax.axvline(switch, color="r", lw=0.8, label="2 unseen types arrive")
    ax.set_title("DL2 Fig. 15: unseen job types")
    ax.legend()
    return _save(fig, out / "fig15_unseen_types.png")


def _fig16(out: Path, trained: TrainingResults) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    teachers = [r["teacher"] for r in trained.fig16]
    x = np.arange(len(teachers))
    for i, (key, label) in enumerate(
        (
            ("teacher_val_avg_jct_s", "teacher itself"),
            ("sl_val_avg_jct_s", "DL2 after SL"),
            ("sl_rl_val_avg_jct_s", "DL2 after SL + RL"),
        )
    ):
        ax.bar(x + 0.27 * i, [r[key] / H for r in trained.fig16], 0.27, label=label)
    ax.set_xticks(x + 0.27)
    ax.set_xticklabels(teachers)
    ax.set_ylabel("validation avg. JCT (h)")
    ax.set_title("DL2 Fig. 16: SL teachers")
    ax.legend(fontsize=8)
    return _save(fig, out / "fig16_teachers.png")


def _fig17(out: Path, f17: Rows) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    for load in _unique(f17, "load"):
        caps = [j for j in _unique(f17, "J") if j > 0]
        st = np.array([means(f17, "avg_jct_s", load=load, J=j, scheduler="dl2") for j in caps])
        line = ax.errorbar(
            caps, st[:, 0] / H, yerr=st[:, 1] / H, marker="o", label=f"DL2, load {load}"
        )
        drf = means(f17, "avg_jct_s", load=load, scheduler="drf")[0] / H
        ax.axhline(drf, ls="--", color=line[0].get_color(), label=f"DRF, load {load}")
    ax.set_xlabel("J (job rows of the state)")
    ax.set_ylabel("avg. JCT (h)")
    ax.set_title("DL2 Fig. 17: concurrent-job cap")
    ax.legend(fontsize=8)
    return _save(fig, out / "fig17_job_cap.png")


def _fmt(mean_ci: tuple[float, float]) -> str:
    mean, ci = mean_ci
    if math.isnan(mean):
        return "n/a"
    return f"{mean:,.0f} ± {ci:,.0f}" if ci > 0 else f"{mean:,.0f}"


def write_markdown(
    out: Path,
    size: Size,
    f9: Rows,
    missing: Sequence[str],
    f13: Rows,
    f14: Rows,
    f17: Rows,
    trained: TrainingResults,
) -> Path:
    """Write ``dl2.md``: the size, and one table per figure (sections a blank line apart)."""
    sections = [
        _md_head(size),
        _md_fig9(f9, missing),
        _md_fig10(size, trained),
        _md_table2(size, trained),
        [
            "## Fig. 13: speed variation (interference noise)",
            "",
            *_sweep_table(f13, "noise", "noise (rel. std)"),
            "",
            "The shipped DL2 policy was trained at noise 0.273 and is not retrained per level.",
        ],
        ["## Fig. 14: epoch-estimate error", "", *_sweep_table(f14, "error", "error")],
        _md_fig15(trained),
        _md_fig16(size, trained),
        _md_fig17(f17),
    ]
    path = out / "dl2.md"
    path.write_text("\n\n".join("\n".join(lines) for lines in sections) + "\n", encoding="utf-8")
    return path


def _md_head(size: Size) -> list[str]:
    tr = size.train
    scale = (
        "**Full size** (the paper's training length; 10 held-out traces per point)."
        if size.label == "full"
        else f"**{size.label.upper()} size**: {size.reduced}. `--full` runs the paper's size."
    )
    return [
        "# DL2 (Peng et al.) §6: Figs. 9, 10, 13–17 and Table 2",
        "",
        scale,
        "",
        f"Evaluation traces: `dl2` workload ({_options(size.eval_options)}), held-out seeds "
        f"{', '.join(map(str, size.fig9_seeds))} (never trained on). Training: `dl2` traces "
        f"({_options(tr.workload_options)}) from seeds ≥ 1,000,000, validation seeds "
        f"{', '.join(map(str, tr.val_seeds))}; network {'×'.join(map(str, tr.hidden))} (per-row), "
        f"mini-batch {tr.batch_size}, one RL update per time slot, other hyper-parameters DL2 "
        "§6.2. JCT in seconds, mean ± 95 % CI over traces where there are several.",
        "",
        "The training figures (Figs. 10, 15, 16, Table 2) run dlsched's DL2 actor-critic "
        "(`dlsched.papers.dl2.algorithm`: a per-row network over dlsched's DL2 state), not the "
        "paper preset `train dl2 --paper` (the paper's state and 2×256 MLP) that made "
        "`dl2:paper`; the paper's numbers quoted beside them are its own method's "
        "(`benchmarks/RESULTS.md`, issue 29, has the paper preset's runs).",
    ]


def _md_fig9(f9: Rows, missing: Sequence[str]) -> list[str]:
    dl29 = means(f9, "avg_jct_s", scheduler="dl2")[0]
    lines = [
        "## Fig. 9: average JCT (shipped policies)",
        "",
        "| scheduler | how it was trained | avg. JCT (s) | dl2 / it |",
        "| --- | --- | ---: | ---: |",
    ]
    for name in _unique(f9, "scheduler"):
        m = means(f9, "avg_jct_s", scheduler=name)
        lines.append(f"| {name} | {how_trained(name)} | {_fmt(m)} | {dl29 / m[0]:.3f} |")
    for name in missing:
        lines.append(f"| {name} | | not available (not registered, or no policy shipped) | |")
    return [*lines, "", *vs_drf(f9)]


def _md_fig10(size: Size, trained: TrainingResults) -> list[str]:
    tr = size.train
    lines = [
        "## Fig. 10: validation JCT during training (SL from DRF)",
        "",
        f"DRF on the validation traces: {trained.drf_val_jct_s:,.0f} s. SL for {tr.sl_steps} "
        f"steps, then RL for {tr.rl_steps}; SL only continues SL instead; RL only starts from "
        "the same random network. Full curves in `fig10_training.csv`.",
        "",
        "| run | step 0 | end of SL phase | best | last |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for run in ("SL only", "RL only", "SL then RL"):
        rows = [r for r in trained.fig10 if r["run"] == run]
        at_sl = [r["val_avg_jct_s"] for r in rows if r["step"] == tr.sl_steps]
        lines.append(
            f"| {run} | {rows[0]['val_avg_jct_s']:,.0f} | "
            f"{at_sl[0] if at_sl else math.nan:,.0f} | "
            f"{min(r['val_avg_jct_s'] for r in rows):,.0f} | {rows[-1]['val_avg_jct_s']:,.0f} |"
        )
    return lines


def _md_table2(size: Size, trained: TrainingResults) -> list[str]:
    lines = [
        f"## Table 2: ablations ({size.train.rl_steps} RL steps from the same SL start)",
        "",
        "| variant | validation avg. JCT after RL (s) | best during RL (s) | slowdown vs full |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in trained.table2:
        lines.append(
            f"| {r['variant']} | {r['final_val_avg_jct_s']:,.0f} | "
            f"{r['best_val_avg_jct_s']:,.0f} | {r['slowdown_vs_full_pct']:+.1f} % |"
        )
    return [
        *lines,
        "",
        f"SL start (DRF imitation): {trained.table2[0]['sl_val_avg_jct_s']:,.0f} s. Paper (its "
        "own method, not these runs'): +21.1 % without the value network, +28.8 % without "
        "exploration, +39.6 % without replay.",
    ]


def _md_fig15(trained: TrainingResults) -> list[str]:
    switch = max(r["step"] for r in trained.fig15 if r["types_in_training"] == 6)
    lines = [
        "## Fig. 15: two unseen job types arrive mid-training",
        "",
        f"SL and RL up to step {switch} on traces of {', '.join(SEEN_TYPES)} only; then all 8 "
        "types. Validation always on all 8.",
        "",
        "| run | at the switch | best after | last |",
        "| --- | ---: | ---: | ---: |",
    ]
    for run in _unique(trained.fig15, "run"):
        rows = [r for r in trained.fig15 if r["run"] == run]
        at = [r["val_avg_jct_s"] for r in rows if r["step"] == switch]
        after = [r["val_avg_jct_s"] for r in rows if r["step"] > switch]
        lines.append(
            f"| {run} | {at[0] if at else math.nan:,.0f} | "
            f"{min(after) if after else math.nan:,.0f} | {rows[-1]['val_avg_jct_s']:,.0f} |"
        )
    return lines


def _md_fig16(size: Size, trained: TrainingResults) -> list[str]:
    tr = size.train
    lines = [
        f"## Fig. 16: SL teachers ({tr.sl_steps} SL steps, then {tr.teacher_rl_steps} RL steps; "
        f"DRF's RL is Fig. 10's {tr.rl_steps})",
        "",
        "| teacher | teacher itself (s) | SL agreement | DL2 after SL (s) | after SL + RL (s) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in trained.fig16:
        lines.append(
            f"| {r['teacher']} | {r['teacher_val_avg_jct_s']:,.0f} | {r['sl_agreement']:.2f} | "
            f"{r['sl_val_avg_jct_s']:,.0f} | {r['sl_rl_val_avg_jct_s']:,.0f} |"
        )
    return lines


def _md_fig17(f17: Rows) -> list[str]:
    caps = [j for j in _unique(f17, "J") if j > 0]
    lines = [
        "## Fig. 17: the J cap (shipped per-row policy run with J rows)",
        "",
        "| load | max concurrent jobs (DRF) | DRF | " + " | ".join(f"J = {j}" for j in caps) + " |",
        "| --- | ---: | ---: |" + " ---: |" * len(caps),
    ]
    for load in _unique(f17, "load"):
        conc = max(r["max_concurrent_jobs"] for r in f17 if r["load"] == load and r["J"] == 0)
        cells = [_fmt(means(f17, "avg_jct_s", load=load, J=j, scheduler="dl2")) for j in caps]
        drf = _fmt(means(f17, "avg_jct_s", load=load, scheduler="drf"))
        lines.append(f"| {load} | {conc} | {drf} | " + " | ".join(cells) + " |")
    return lines


def _options(options: Any) -> str:
    merged = {"servers": 13, "num_jobs": 200, "load": 1.0, **dict(options)}
    return ", ".join(f"{k}={v}" for k, v in merged.items())


def _sweep_table(rows: Rows, key: str, label: str) -> list[str]:
    xs = _unique(rows, key)
    names = _unique(rows, "scheduler")
    out = [
        f"| {label} | " + " | ".join(names) + " | DL2 / DRF |",
        "| --- |" + " ---: |" * (len(names) + 1),
    ]
    for x in xs:
        cells = [_fmt(means(rows, "avg_jct_s", **{key: x, "scheduler": n})) for n in names]
        ratio = (
            means(rows, "avg_jct_s", **{key: x, "scheduler": "dl2"})[0]
            / means(rows, "avg_jct_s", **{key: x, "scheduler": "drf"})[0]
        )
        out.append(f"| {x} | " + " | ".join(cells) + f" | {ratio:.3f} |")
    return out
