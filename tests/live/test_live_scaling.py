"""Hot and checkpoint-restart scaling keep training exact: nothing lost, nothing applied twice."""

from __future__ import annotations

import random

from dlsched.live import LiveJob
from tests.live.live_helpers import assert_matches_reference, config


def _run(events: list[tuple[int, int, int, str]], start: tuple[int, int], **cfg_kw: object) -> None:
    """Start with ``start`` (PS, workers); at each (step, ps, workers, mode) resize; compare."""
    cfg = config(**cfg_kw)
    with LiveJob(cfg, *start, timeout_s=30) as job:
        for step, num_ps, num_workers, mode in events:
            job.wait(steps=step, timeout_s=30)
            report = job.scale_to(num_ps, num_workers, mode=mode)
            assert report.after == (num_ps, num_workers)
            assert report.clock <= cfg.total_steps
            roster = job.roster()
            assert (len(roster.ps), len(roster.workers)) == (num_ps, num_workers)
        job.wait(timeout_s=60)
        params = job.parameters()
    assert_matches_reference(params, cfg)


def test_add_ps() -> None:
    _run([(10, 3, 1, "hot")], (1, 1))


def test_remove_ps() -> None:
    _run([(10, 1, 2, "hot")], (3, 2))


def test_add_worker() -> None:
    _run([(10, 1, 3, "hot")], (1, 1), model="cnn", total_steps=60)


def test_remove_worker() -> None:
    _run([(10, 2, 1, "hot")], (2, 3))


def test_restart_scaling_and_suspend_resume() -> None:
    cfg = config(total_steps=60)
    with LiveJob(cfg, 1, 1, timeout_s=30) as job:
        job.wait(steps=10, timeout_s=30)
        report = job.scale_to(2, 3, mode="restart")
        assert report.after == (2, 3) and job.num_workers == 3
        job.wait(steps=report.clock + 10, timeout_s=30)
        version = job.suspend()  # preemption by the live loop: checkpoint, stop everything
        assert job.suspended and job.pids() == [] and version >= report.clock + 10
        job.resume(1, 2)
        assert not job.suspended and (job.num_ps, job.num_workers) == (1, 2)
        job.wait(timeout_s=60)
        params = job.parameters()
    assert_matches_reference(params, cfg)


def test_random_sequence() -> None:
    rng = random.Random(0)
    events = []
    ps, workers = 2, 2
    for i in range(6):
        ps = max(1, min(4, ps + rng.choice([-1, 1, 2])))
        workers = max(1, min(4, workers + rng.choice([-2, -1, 1])))
        events.append((8 + 10 * i, ps, workers, "hot"))
    _run(events, (2, 2), total_steps=80, block_size=1000)
