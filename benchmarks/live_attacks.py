"""Live-runtime attacks by a local process without the job's secret (issue 15, item 3).

Run::

    PYTHONPATH=src .venv/bin/python benchmarks/live_attacks.py            # 10 jobs
    PYTHONPATH=src .venv/bin/python benchmarks/live_attacks.py --jobs 3

Each job (1 PS + 2 workers on loopback, a small model) trains for a few steps, then for
``--attack-s`` seconds an intruder holds, without sending anything:

- *takeover*: connections to every PS with the identities workers and PS used to have (``w0``,
  ``w1``, ``p0``), and to the coordinator with each member's real coordinator identities
  (``n-<nonce>``, ``h-<nonce>``: what an intruder that had seen them would use);
- *silent peer*: connections with fresh identities to every socket, and a scaling round whose
  newcomer never registers (it must time out, ``round_timeout_s``, and leave the job as it was).

A job counts as *stalled* if it made no step during the attack window or did not finish. The
final parameters are compared with an unattacked run (`reference_train`, which live runs equal
to float-summation order) with ``torch.allclose(atol=1e-5, rtol=0)``. Prints one JSON line per
job and a summary.
"""

from __future__ import annotations

import argparse
import json
import secrets
import time
from typing import Any

import torch
import zmq

from dlsched.live import JobConfig, LiveJob, reference_train

ATOL = 1e-5


def _connect_silent(ctx: zmq.Context[Any], endpoint: str, ident: bytes) -> zmq.Socket[Any]:
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.ROUTING_ID, ident)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    return sock


def attacked_job(cfg: JobConfig, attack_s: float) -> dict[str, Any]:
    """Run one job under the takeover and silent-peer attacks; what happened."""
    t0 = time.perf_counter()
    ctx: zmq.Context[Any] = zmq.Context()
    socks: list[zmq.Socket[Any]] = []
    row: dict[str, Any] = {"seed": cfg.seed}
    try:
        with LiveJob(cfg, 1, 2, timeout_s=60) as job:
            job.wait(steps=5, timeout_s=60)
            st = job.status()
            for endpoint in job.roster().ps.values():
                for name in (b"w0", b"w1", b"p0", secrets.token_hex(8).encode()):
                    socks.append(_connect_silent(ctx, endpoint, name))
            for m in st["members"]:
                for prefix in ("n-", "h-"):
                    ident = f"{prefix}{m['nonce']}".encode()
                    socks.append(_connect_silent(ctx, job._endpoint, ident))
            silent_nonce = secrets.token_hex(16)
            socks.append(_connect_silent(ctx, job._endpoint, f"n-{silent_nonce}".encode()))
            before = job.progress()
            time.sleep(attack_s)
            during = job.progress() - before
            body = {"join": [silent_nonce], "add_ps": 0, "add_workers": 1}
            body |= {"remove_ps": [], "remove_workers": []}
            reply = job._request("CTL_SCALE", body, cfg.round_timeout_s + 30.0)
            row["silent_round_aborted"] = not reply.get("ok")
            row["workers_after"] = len(job.roster().workers)
            for sock in socks:
                sock.close(0)
            socks = []
            job.wait(timeout_s=120)
            params = job.parameters()
        ref, _ = reference_train(cfg, cfg.total_steps)
        row["steps_during_attack"] = during
        row["finished"] = True
        row["max_abs_diff"] = float((params - ref).abs().max())
        row["allclose"] = bool(torch.allclose(params, ref, atol=ATOL, rtol=0.0))
    except Exception as exc:  # a stalled or failed job is a result here, not a crash
        row.setdefault("steps_during_attack", 0)
        row["finished"] = False
        row["allclose"] = False
        row["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        for sock in socks:
            sock.close(0)
        ctx.term()
    row["stalled"] = not row["finished"] or row["steps_during_attack"] == 0
    row["wall_s"] = round(time.perf_counter() - t0, 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10, help="attacked jobs to run")
    parser.add_argument("--attack-s", type=float, default=2.0, help="takeover window, seconds")
    parser.add_argument("--steps", type=int, default=150, help="steps per job")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for i in range(args.jobs):
        cfg = JobConfig(
            model="smooth",
            total_batch=24,
            seed=i,
            total_steps=args.steps,
            block_size=4096,
            snapshot_every=0,
            step_sleep_s=0.01,
            round_timeout_s=2.0,
        )
        row = attacked_job(cfg, args.attack_s)
        print(json.dumps(row), flush=True)
        rows.append(row)
    stalled = sum(r["stalled"] for r in rows)
    close = sum(r["allclose"] for r in rows)
    aborted = sum(bool(r.get("silent_round_aborted")) for r in rows)
    print(
        f"stalled: {stalled} of {len(rows)} jobs; parameters allclose to an unattacked run: "
        f"{close} of {len(rows)}; silent-newcomer rounds aborted by timeout: {aborted} of "
        f"{len(rows)}"
    )


if __name__ == "__main__":
    main()
