"""Live scaling benchmark (issue 7): DL2 Fig. 11, Fig. 12 and the runtime's throughput overhead.

Run::

    .venv/bin/python benchmarks/live_scaling.py            # everything, a few minutes
    .venv/bin/python benchmarks/live_scaling.py --quick    # fewer repeats, 1-3 PS

- Fig. 11: workers' training suspension when adding 1..6 PS to a running job of the >= 10 M
  parameter model, hot scaling vs checkpoint-restart (processes relaunched through the fork
  server, torch already imported, and, for a cold restart, with fresh interpreters).
  Suspension follows DL2 §6.3: from the moment a worker holds the parameters of the scaling
  clock's version to the moment it resumes. ``stall`` is a stricter measure: the delay added to
  the workers' step cadence (last step start before the clock → resumption, minus the usual
  step interval). Added PS join in one round ("batch") or one round per PS as in DL2 ("1-by-1").
- Fig. 12: time of each of the four scaling steps when adding one PS, per model size.
- Throughput: steps/s of one job with 1 PS + 1 worker vs the same training in one plain
  PyTorch process (`dlsched.live.reference_train`), as a ratio.

Everything runs on this machine over loopback; all numbers are medians of the repeats.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any

import torch

from dlsched.live import JobConfig, LiveJob, ScalingReport, reference_train
from dlsched.live.models import num_params

_HB: dict[str, Any] = {"heartbeat_timeout_s": 5.0}
"""Failure detection is not measured here; on a busy shared machine a niced PS moving 42 MB
can miss the default 1 s heartbeat deadline and be declared dead by mistake."""


def _ms(x: float) -> str:
    return f"{1000 * x:8.1f}"


def _settle(job: LiveJob, steps: int = 2, timeout_s: float = 60.0) -> None:
    job.wait(steps=job.progress() + steps, timeout_s=timeout_s)


def fig11(model: str, max_ps: int, repeats: int, workers: int, cold: bool) -> list[dict[str, Any]]:
    """Suspension when adding 1..max_ps PS: hot (batch, 1-by-1) and checkpoint-restart."""
    # cold restarts start fresh interpreters that import torch: on a busy 2-core machine that
    # takes longer than the default 30 s start round
    cfg = JobConfig(model=model, total_batch=32, snapshot_every=0, round_timeout_s=180.0, **_HB)
    rows = []
    with LiveJob(cfg, 1, workers, timeout_s=180) as job:
        _settle(job, 3)
        for k in range(1, max_ps + 1):
            batch: list[ScalingReport] = []
            single: list[list[ScalingReport]] = []
            restart: list[ScalingReport] = []
            for _ in range(repeats):
                _settle(job)
                batch.append(job.scale_to(1 + k, workers))
                job.scale_to(1, workers)
                _settle(job)
                single.append([job.scale_to(1 + i, workers) for i in range(1, k + 1)])
                job.scale_to(1, workers)
                _settle(job)
                restart.append(job.scale_to(1 + k, workers, mode="restart"))
                job.scale_to(1, workers)
            cold_s = float("nan")
            if cold:
                job.start_method = "spawn"
                _settle(job)
                cold_s = job.scale_to(1 + k, workers, mode="restart").worker_update_s
                job.start_method = "forkserver"
                job.scale_to(1, workers, mode="restart")
            rows.append(
                {
                    "added_ps": k,
                    "hot_batch_s": statistics.median(r.worker_update_s for r in batch),
                    "hot_batch_stall_s": statistics.median(
                        r.details.get("stall_s", float("nan")) for r in batch
                    ),
                    "hot_batch_migration_s": statistics.median(r.migration_s for r in batch),
                    "hot_1by1_s": statistics.median(
                        sum(r.worker_update_s for r in rs) for rs in single
                    ),
                    "hot_1by1_stall_s": statistics.median(
                        sum(r.details.get("stall_s", float("nan")) for r in rs) for rs in single
                    ),
                    "restart_s": statistics.median(r.worker_update_s for r in restart),
                    "restart_cold_s": cold_s,
                    "moved_mb": statistics.median(r.moved_bytes for r in batch) / 1e6,
                }
            )
            row = rows[-1]
            print(
                f"  +{k} PS: hot batch {_ms(row['hot_batch_s'])} ms "
                f"(stall {_ms(row['hot_batch_stall_s'])}, migration "
                f"{_ms(row['hot_batch_migration_s'])}), hot 1-by-1 {_ms(row['hot_1by1_s'])} ms, "
                f"restart {_ms(row['restart_s'])} ms, cold restart {_ms(row['restart_cold_s'])} ms",
                flush=True,
            )
    return rows


def fig12(models: list[str], repeats: int) -> list[dict[str, Any]]:
    """Time of DL2's four scaling steps when adding one PS to a 1 PS + 1 worker job."""
    rows = []
    for model in models:
        cfg = JobConfig(model=model, total_batch=32, snapshot_every=0, **_HB)
        reports = []
        with LiveJob(cfg, 1, 1, timeout_s=120) as job:
            _settle(job, 3)
            for _ in range(repeats):
                _settle(job)
                reports.append(job.scale_to(2, 1))
                job.scale_to(1, 1)
        row = {
            "model": model,
            "params": num_params(model),
            "registration_s": statistics.median(r.registration_s for r in reports),
            "assignment_s": statistics.median(r.assignment_s for r in reports),
            "migration_s": statistics.median(r.migration_s for r in reports),
            "worker_update_s": statistics.median(r.worker_update_s for r in reports),
            "stall_s": statistics.median(r.details.get("stall_s", float("nan")) for r in reports),
            "clock_wait_s": statistics.median(r.clock_wait_s for r in reports),
        }
        rows.append(row)
        print(
            f"  {model:6s} {row['params']:>10,d} params:"
            f" 1 registration {_ms(row['registration_s'])}"
            f" | 2 assignment {_ms(row['assignment_s'])} | 3 migration {_ms(row['migration_s'])}"
            f" | 4 worker update {_ms(row['worker_update_s'])} ms"
            f" (stall {_ms(row['stall_s'])}, clock wait {_ms(row['clock_wait_s'])})",
            flush=True,
        )
    return rows


def throughput(models: list[str], seconds: float) -> list[dict[str, Any]]:
    """Steps/s of 1 PS + 1 worker vs plain single-process PyTorch (one thread)."""
    rows = []
    torch.set_num_threads(1)
    for model in models:
        cfg = JobConfig(model=model, total_batch=32, snapshot_every=0, **_HB)
        _, dt = reference_train(cfg, 3)  # warm-up
        steps = 3
        while dt < seconds / 2:
            steps *= 2
            _, dt = reference_train(cfg, steps)
        plain = steps / dt
        with LiveJob(cfg, 1, 1, timeout_s=120) as job:
            _settle(job, 3)
            p0, t0 = job.progress(), time.perf_counter()
            time.sleep(seconds)
            p1, t1 = job.progress(), time.perf_counter()
        live = (p1 - p0) / (t1 - t0)
        rows.append({"model": model, "plain_steps_s": plain, "live_steps_s": live})
        print(
            f"  {model:6s}: plain PyTorch {plain:8.1f} steps/s, live 1 PS + 1 worker "
            f"{live:8.1f} steps/s, ratio {live / plain:5.2f}",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 repeat, up to 3 PS")
    parser.add_argument("--max-ps", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1, help="workers of the Fig. 11 job")
    parser.add_argument("--no-cold", action="store_true", help="skip cold (spawn) restarts")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    max_ps = min(args.max_ps, 3) if args.quick else args.max_ps
    print(
        f"live scaling benchmark, {time.strftime('%Y-%m-%d %H:%M')}, {platform.node()}, "
        f"{platform.processor() or platform.machine()}, torch {torch.__version__}"
    )
    print(f"\nFig. 11: adding PS to a 'large' job ({num_params('large'):,d} params), ms")
    f11 = fig11("large", max_ps, repeats, args.workers, cold=not args.no_cold)
    print("\nFig. 12: the four scaling steps when adding one PS, ms")
    f12 = fig12(["cnn", "mlp", "large"], repeats)
    print("\nThroughput: 1 PS + 1 worker vs plain PyTorch")
    thr = throughput(["cnn", "mlp", "large"], 4.0 if args.quick else 8.0)
    ratios = [r["restart_s"] / r["hot_batch_s"] for r in f11 if r["hot_batch_s"] > 0]
    per_ps = max(r["hot_batch_s"] / r["added_ps"] for r in f11)
    print(
        f"\nhot vs restart: restart/hot suspension ratio {min(ratios):.0f}x..{max(ratios):.0f}x;"
        f" hot per added PS (batch) <= {per_ps * 1e3:.1f} ms"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"fig11": f11, "fig12": f12, "throughput": thr}, fh, indent=1)


if __name__ == "__main__":
    main()
