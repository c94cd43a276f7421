"""``dlsched reproduce gavel``: average JCT against input job rate, heterogeneity-agnostic vs
-aware policies, shaped like Gavel's evaluation (OSDI 2020, Fig. 8/9: LAS and its ``_perf``
variant on a 36:36:36 K80/P100/V100 cluster, continuous Poisson arrivals).

Measured as Gavel measures it (its ``run_sweep_continuous.py``, ``-s 4000 -e 5000``): jobs
arrive in a continuous stream; the average JCT is that of a window of job ids (by arrival),
and the run stops once every job of the window has finished, while later jobs keep arriving and
competing. Gavel stops a run only at a wall-clock timeout (its ``inf``); here a window that has
not finished ``cutoff_h`` simulated hours after its last job arrived, or a run with more than
``max_active_per_gpu`` active jobs per GPU, counts as saturated (JCT ``inf``), so that runs far
over capacity end. Both limits are far from what a run near capacity reaches: the longest jobs
take a week on a V100 and 2-3 weeks on a K80, so a short cutoff (400 h, the old default) cut
runs just below capacity, whose windows Gavel measures, and turned the rise near capacity into
a wall. The rates are dense near each policy's capacity (about 5.5 jobs/h for LAS and 7-8 for
LAS-het on 36+36+36 GPUs), where Gavel's curves rise. The experiment writes

* ``runs.csv`` — one row per (policy, rate, seed): average JCT of the window, jobs of the window
  finished, jobs arrived by then, simulated time at the end (s);
* ``summary.csv`` and ``README.md`` — mean and 95 % CI half-width over seeds per (policy, rate),
  and the aware policy's JCT relative to the agnostic one's;
* ``gavel.png`` — average JCT (hours) against input job rate, one line per policy.

Differences from Gavel's figure, said in the README it writes: `REDUCED` (the default) measures
jobs 400-800 of the stream, one seed and fewer rates, where Gavel's window is 4,000-5,000 (the
queue near capacity has had less time to build up); `FULL` is Gavel's window, 15 rates and 3
seeds (hours of CPU).
"""

from __future__ import annotations

import logging
import math
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.csv_rows import write_csv
from dlsched.experiments.compare import mean_ci95
from dlsched.experiments.plots import plt
from dlsched.placement import make_placement
from dlsched.schedulers.registry import make_scheduler
from dlsched.sim.config import RescaleCost, SimConfig
from dlsched.sim.simulator import Simulator

log = logging.getLogger(__name__)

POLICIES = ("gavel-las", "gavel-las-het", "gavel-fifo", "gavel-fifo-het")
"""Agnostic and aware pairs (LAS, FIFO)."""


@dataclass(frozen=True)
class Size:
    """How big the experiment is.

    Attributes:
        window: ids of the jobs whose average JCT is measured, ``[start, end)`` (arrival order).
        rates: input job rates, jobs per hour.
        seeds: workload seeds.
        cutoff_h: a window not finished this many simulated hours after its last job arrived
            is saturated (hours); arrivals go on until then.
        max_active_per_gpu: a run whose active jobs (running and waiting) outnumber the GPUs
            this many times over is saturated (the queue of a cluster past its capacity grows
            without end, and so does the time to simulate it).
    """

    window: tuple[int, int]
    rates: tuple[float, ...]
    seeds: tuple[int, ...]
    cutoff_h: float = 1500.0
    max_active_per_gpu: float = 10.0


REDUCED = Size(window=(400, 800), rates=(2.0, 4.0, 5.0, 5.5, 6.0, 6.5, 7.0, 8.0), seeds=(1,))
FULL = Size(
    window=(4000, 5000),
    rates=tuple(0.5 * k for k in range(2, 17)),  # 1 to 8 jobs/h
    seeds=(1, 2, 3),
)


def run_one(policy: str, rate: float, seed: int, size: Size) -> dict[str, Any]:
    """One run's row of ``runs.csv``: the stream runs until the window's jobs finish."""
    from dlsched.papers.gavel.workload import make_gavel

    low, high = size.window
    stream = 2 * high + math.ceil(rate * size.cutoff_h)  # arrivals go on past the cutoff
    workload = make_gavel(seed=seed, num_jobs=stream, jobs_per_hour=rate)
    scheduler = make_scheduler(policy)
    config = SimConfig(
        interval_s=workload.interval_s,
        on_events=workload.on_events,
        noise=workload.noise,
        rescale=workload.rescale or RescaleCost(),
        seed=seed,
    )
    cluster = workload.make_cluster()
    sim = Simulator(
        workload.jobs,
        cluster,
        workload.model,
        scheduler,
        make_placement(workload.placement),
        config,
        workload_name=workload.name,
    )
    cutoff_s = workload.jobs[high - 1].submit_time_s + size.cutoff_h * 3600.0
    most_active = size.max_active_per_gpu * cluster.total.gpu
    seen, done = 0, 0
    while (now := sim.next_point()) is not None and now <= cutoff_s:
        view = sim.view()
        if len(view.running) + len(view.pending) > most_active:
            break
        sim.apply(scheduler.decide(view))
        done += sum(1 for r in sim.finished[seen:] if low <= r.job_id < high)
        seen = len(sim.finished)
        if done == high - low:
            break
    window = [
        r.finish_s - r.spec.submit_time_s
        for r in sim.finished
        if low <= r.job_id < high and r.finish_s is not None
    ]
    complete = len(window) == high - low
    return {
        "policy": policy,
        "jobs_per_hour": rate,
        "seed": seed,
        "window_finished": len(window),
        "arrived": sum(1 for j in workload.jobs if j.submit_time_s <= sim.now_s),
        "avg_jct_s": sum(window) / len(window) if complete else math.inf,
        "end_s": sim.now_s,
    }


def run(
    out_dir: Path, *, full: bool = False, size: Size | None = None, workers: int | None = None
) -> list[Path]:
    """Run the experiment and write its files into ``out_dir``; the paths written.

    ``workers``: processes for the runs (default: this process's CPUs); each run is seeded and
    independent, so the files are the same for any count.
    """
    size = size or (FULL if full else REDUCED)
    out_dir.mkdir(parents=True, exist_ok=True)
    cases = [
        (policy, rate, seed) for policy in POLICIES for rate in size.rates for seed in size.seeds
    ]
    runs = _run_cases(cases, size, workers or len(os.sched_getaffinity(0)))
    summary = []
    for policy in POLICIES:
        for rate in size.rates:
            rows = [r for r in runs if r["policy"] == policy and r["jobs_per_hour"] == rate]
            entry: dict[str, Any] = {"policy": policy, "jobs_per_hour": rate, "runs": len(rows)}
            jcts = [float(r["avg_jct_s"]) for r in rows]
            mean, half = mean_ci95(jcts) if all(map(math.isfinite, jcts)) else (math.inf, 0.0)
            entry["avg_jct_s"], entry["avg_jct_s_ci95"] = mean, half
            summary.append(entry)
            log.info("gavel %s at %g jobs/h: avg JCT %.0f s", policy, rate, entry["avg_jct_s"])
    return [
        write_csv(out_dir / "runs.csv", runs),
        write_csv(out_dir / "summary.csv", summary),
        _plot(out_dir / "gavel.png", summary, size),
        _write_markdown(out_dir / "README.md", summary, size, full),
    ]


def _run_cases(
    cases: list[tuple[str, float, int]], size: Size, workers: int
) -> list[dict[str, Any]]:
    """`run_one` of each case, in the order of ``cases``; on ``workers`` processes when above 1,
    the highest rates (the longest runs) started first."""
    if workers <= 1 or len(cases) <= 1:
        rows = []
        for case in cases:
            rows.append(run_one(*case, size))
            log.info("gavel run %s", rows[-1])
        return rows
    order = sorted(range(len(cases)), key=lambda i: -cases[i][1])
    with ProcessPoolExecutor(max_workers=min(workers, len(cases))) as pool:
        futures = {i: pool.submit(run_one, *cases[i], size) for i in order}
        for i in order:
            log.info("gavel run %s", futures[i].result())
        return [futures[i].result() for i in range(len(cases))]


def _plot(path: Path, summary: list[dict[str, Any]], size: Size) -> Path:
    """Average JCT against rate, one line per policy; a saturated point is a triangle at the
    top."""
    fig, ax = plt.subplots(figsize=(6, 4))
    finite = [r for r in summary if math.isfinite(r["avg_jct_s"])]
    top = 1.1 * max(((r["avg_jct_s"] + r["avg_jct_s_ci95"]) / 3600 for r in finite), default=1.0)
    for k, policy in enumerate(POLICIES):
        rows = [r for r in summary if r["policy"] == policy and math.isfinite(r["avg_jct_s"])]
        line = ax.errorbar(
            [r["jobs_per_hour"] for r in rows],
            [r["avg_jct_s"] / 3600 for r in rows],
            yerr=[r["avg_jct_s_ci95"] / 3600 for r in rows],
            marker="o",
            capsize=3,
            linestyle="--" if policy.endswith("-het") else "-",
            label=policy,
        )
        saturated = [r["jobs_per_hour"] for r in summary if r["policy"] == policy]
        saturated = [x for x in saturated if x not in {r["jobs_per_hour"] for r in rows}]
        color = line.lines[0].get_color()
        shifted = [x + 0.1 * (k - 1.5) for x in saturated]  # side by side, not on top
        ax.scatter(shifted, [top] * len(saturated), marker="^", color=color, zorder=3)
    ax.set_xlabel("input job rate (jobs/hour)")
    ax.set_ylabel("average JCT (hours); ▲ saturated")
    low, high = size.window
    ax.set_title(f"Gavel's jobs, 36 GPUs of each type; jobs {low}-{high} of a stream")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _hours(seconds: float, half: float) -> str:
    return f"{seconds / 3600:.2f} ± {half / 3600:.2f}" if math.isfinite(seconds) else "saturated"


def _write_markdown(path: Path, summary: list[dict[str, Any]], size: Size, full: bool) -> Path:
    low, high = size.window
    lines = [
        "# Average JCT vs input job rate, agnostic vs aware (`dlsched reproduce gavel`)",
        "",
        "Full size."
        if full
        else "**Reduced size** (the default; `--full` is Gavel's window, jobs 4,000-5,000,"
        " 1-8 jobs/h in steps of 0.5, 3 seeds).",
        "",
        "Workload `gavel`: one-GPU jobs in a continuous stream (Poisson arrivals, Gavel's job"
        " types and durations), 36 GPUs of each type, 360 s rounds; seeds"
        f" {', '.join(map(str, size.seeds))}. Average JCT of jobs {low}-{high} (by arrival),"
        " the run stopping once they have all finished while later jobs keep arriving, as"
        " Gavel measures (its jobs 4,000-5,000); 'saturated': the window had not finished"
        f" {size.cutoff_h:g} h after its last job arrived, or more than"
        f" {size.max_active_per_gpu:g} jobs per GPU were active. The shape, not Gavel's"
        " numbers, is the target.",
        "",
        "| policy | jobs/h | avg JCT of the window (h) |",
        "| --- | ---: | ---: |",
    ]
    for r in summary:
        lines.append(
            f"| {r['policy']} | {r['jobs_per_hour']:g} | "
            f"{_hours(r['avg_jct_s'], r['avg_jct_s_ci95'])} |"
        )
    lines += ["", "Aware relative to agnostic (average JCT):", ""]
    for agnostic in ("gavel-las", "gavel-fifo"):
        for rate in size.rates:
            a = next(r for r in summary if r["policy"] == agnostic and r["jobs_per_hour"] == rate)
            h = next(
                r
                for r in summary
                if r["policy"] == f"{agnostic}-het" and r["jobs_per_hour"] == rate
            )
            both = math.isfinite(a["avg_jct_s"]) and math.isfinite(h["avg_jct_s"])
            ratio = f"{h['avg_jct_s'] / a['avg_jct_s']:.2f}×" if both else "n/a (saturated)"
            lines.append(f"- {agnostic}-het / {agnostic} at {rate:g} jobs/h: {ratio}")
    path.write_text("\n".join(lines) + "\n")
    return path
