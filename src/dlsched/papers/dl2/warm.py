"""Compile DL2's numba kernels into numba's on-disk cache ahead of a user's first run.

DL2's state, network, batched-environment and sampling kernels (`slot_kernels`,
`net_kernels`, `batched_kernels`, `batched_step`, `sample_kernels`) are ``@njit(cache=True)``:
the first process that calls them compiles them (about 50 s on a 2-core box, issue 34) and
later processes load the cache (about a second). ``make install`` runs this module once, so
that compiling happens at install, not in front of a user's first ``DL2-v0`` step or
``simulate -s dl2``::

    python -m dlsched.papers.dl2.warm

It runs a tiny greedy ``dl2`` simulation (the state and network kernels) and a few slots of a
two-trace `Dl2BatchedEnv` (the batched kernels), samples its actions as the paper collector
does (`sample_kernels.choose_actions`, on the transposed logits it is given and on plain ones),
and prints the seconds it took. It also compiles the core of Gavel's round mechanism
(`dlsched.sim.gavel_core`, ~20 s), by a short ``gavel-las`` run of 30 Philly jobs on it (and one
of 20 ``gavel`` jobs on three GPU types, which the same kernel replays), so that a user's first
large Gavel run does not wait for numba either.
"""

from __future__ import annotations

import time

import numpy as np


def warm() -> float:
    """Call every DL2 kernel once on a tiny problem; the seconds it took (compiling included
    when the cache was cold)."""
    from dlsched.papers.dl2.batched_env import Dl2BatchedEnv
    from dlsched.papers.dl2.sample_kernels import choose_actions
    from dlsched.runner import simulate

    start = time.perf_counter()
    simulate("dl2", "dl2", seed=0, servers=2, num_jobs=6)
    env = Dl2BatchedEnv(2, servers=2, num_jobs=6)
    env.reset([1, 2])
    for _ in range(50):
        legal = [int(np.flatnonzero(row)[0]) for row in env.mask]
        *_, terminated, truncated, _ = env.step(legal)
        if (terminated | truncated).any():
            env.reset_done()
    out, use = np.empty(env.num_envs, dtype=np.int64), np.empty(env.num_envs, dtype=bool)
    u = np.random.default_rng(0).random((3, env.num_envs))
    plain = np.zeros(env.mask.shape, np.float32)
    for logits in (np.zeros(plain.shape[::-1], np.float32).T, plain):
        choose_actions(logits, u, 0.5, env.rows, env.mask, out, use)
    simulate("philly:6214e9", "gavel-las", seed=0, max_jobs=30, core="compiled")
    types = "v100:1x4,p100:1x4,k80:1x4"
    simulate("gavel", "gavel-las", seed=0, num_jobs=20, cluster=types, core="compiled")
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"DL2 kernels ready in {warm():.1f} s")
