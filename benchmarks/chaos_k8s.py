"""Chaos run of ``dlsched k8s run`` (issue 30): two controllers, ≥ 500 DLJobs, ≥ 20 faults.

Run::

    PYTHONPATH=src .venv/bin/python benchmarks/chaos_k8s.py                  # 500 jobs, 22 faults
    PYTHONPATH=src .venv/bin/python benchmarks/chaos_k8s.py --seed 3 --jobs 800 --faults 33 --json

Controller processes (``python -m dlsched k8s run --bind -s drf``, lease 6 s, rounds every
0.5 s) run against the project's fake Kubernetes API server on 127.0.0.1 (``tests/k8s``) with 50
nodes of 4 GPUs, 16 cores, 64 GiB (every fifth one also runs a pod dlsched does not manage, 1
GPU). DLJobs arrive over 20 s; a granted job runs 1-3 s and reports Succeeded (its PS pods keep
running until the controller deletes them). Faults, one after the other, cycle through: the
leader SIGSTOPped for 1.5 leases, the leader SIGTERMed (a new controller started), 2 s bursts
of 500s / stalls / 409s / off-spec list replies (30% of requests), dropped watches, jobs
finished at once, a node cordoned or deleted for 3 s, an invalid DLJob; 1% 500s, 409s and
stalls all along. The server checks at every write and change (`tests/k8s/chaos_server.py`):

- ``max_writers``: most controllers whose writes the server accepted within one lease term;
  ``writes_past_lease``: writes accepted from a controller that did not hold the lease
  unexpired at that moment (a second writer); ``writes_refused``: writes the server's fence
  refused (403) because their controller no longer held the lease (harmless: counted apart).
  The server fences as an admission policy would (``tests/k8s/apiserver.py``); ``--no-fence``
  turns that off, to see what a check-then-act lease alone lets through;
- ``overcommit``: moments a node's grants (or bound pods) exceeded its allocatable;
- ``duplicate_pods``: a job's role holding more pods than its grant for over 12 s (2 leases);
- ``orphan_pods``: pods still running for a finished or deleted job at the end (never cleaned
  up); ``orphan_linger_max_ms``: the longest such a pod stayed before the controller deleted it
  (it includes the time no controller leads: a paused leader's 9 s and the lease's 6 s);
- ``jobs_lost``: jobs not finished at the end (``jobs_never_granted``: never given workers);
- ``finished_jobs_regrown``, ``controller_crashes``, ``tracebacks`` in the controllers' logs,
  ``sigterm_exit_max_ms`` / ``sigterm_exits_over_5s`` and ``leases_released`` (SIGTERMed
  leaders whose lease was free or taken over at once).

All but the counts of work done and ``writes_refused`` must be 0. `run` is what
``benchmarks/chaos.py`` calls.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(
    seed: int, jobs: int, faults: int, log_dir: Path | None = None, fence: bool = True
) -> dict[str, int]:
    """One seeded chaos run with ``jobs`` DLJobs and ``faults`` injected faults; its figures
    (``log_dir``: keep the controllers' logs there; ``fence``: the server refuses writes of a
    controller past its lease)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.k8s.chaos_run import run as chaos_run

    return chaos_run(seed, jobs, faults, log_dir=log_dir, fence=fence)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--faults", type=int, default=22)
    parser.add_argument("--json", action="store_true", help="one JSON object, no table")
    parser.add_argument("--log-dir", type=Path, help="keep the controllers' logs here")
    parser.add_argument(
        "--no-fence",
        action="store_true",
        help="the server accepts writes of a controller past its lease (and counts them)",
    )
    args = parser.parse_args()
    figures = run(args.seed, args.jobs, args.faults, args.log_dir, fence=not args.no_fence)
    if args.json:
        print(json.dumps(figures))
        return
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}} {value}")


if __name__ == "__main__":
    main()
