"""Non-preemptive list schedulers: FIFO, SJF, SIF, LRF, SPF, Packer, Tetris★, Random, DSIF, SAF.

Each scenario is small enough to work out by hand; the expected decision is in the comments.
"""

from __future__ import annotations

import pytest

from dlsched.core import Allocation, JobSpec, Resources
from dlsched.schedulers.dsif import MAX_DELAYS, Dsif, servers_needed
from dlsched.schedulers.fifo import Fifo
from dlsched.schedulers.packer import Packer
from dlsched.schedulers.random_policy import RandomOrder
from dlsched.schedulers.registry import make_scheduler, schedulers
from dlsched.schedulers.saf import Saf
from dlsched.schedulers.tetris_star import TetrisStar
from tests.schedulers.helpers import counts, gpu, replica, scene


def three_jobs_on_four_gpus():
    """One 4-GPU server; A (4 GPUs, 200 s), B (1 GPU, 1000 s), C (2 GPUs, 300 s) arrive A, B, C.

    GPU-seconds: A 800, B 1000, C 600.
    """
    s = scene()
    s.wait(gpu(0, 200.0, 4))
    s.wait(gpu(1, 1000.0, 1))
    s.wait(gpu(2, 300.0, 2))
    return s


def test_fifo_blocks_behind_the_first_job_that_does_not_fit():
    s = scene()
    s.run(gpu(9, 50.0, 2, submit_s=-1.0), [(0, 2)])  # 2 of 4 GPUs busy
    s.wait(gpu(0, 100.0, 1))
    s.wait(gpu(1, 100.0, 2))  # after job 0 only 1 GPU is free: blocks
    s.wait(gpu(2, 100.0, 1))  # would fit, but is behind job 1
    assert counts(Fifo().decide(s.view())) == {0: (1, 0)}


def test_sif_starts_the_shortest_ideal_time_first():
    # A (200 s) first takes all 4 GPUs; nothing else fits
    assert counts(make_scheduler("sif").decide(three_jobs_on_four_gpus().view())) == {0: (4, 0)}


def test_lrf_starts_the_fewest_gpus_first():
    # B (1 GPU), then C (2 GPUs); A (4) no longer fits
    assert list(counts(make_scheduler("lrf").decide(three_jobs_on_four_gpus().view())).items()) == [
        (1, (1, 0)),
        (2, (2, 0)),
    ]


def test_lrf_reused_instance_ranks_by_the_current_cluster_and_jobs():
    # no GPUs: ranked by dominant share, which flips between a CPU-poor and a memory-poor cluster
    cpu_heavy, mem_heavy = Resources(cpu=4, mem=4), Resources(cpu=1, mem=8)
    lrf = make_scheduler("lrf")
    orders = []
    for capacity in (Resources(gpu=4, cpu=8, mem=64), Resources(gpu=4, cpu=64, mem=16)):
        s = scene(capacity=capacity)
        s.wait(replica(0, cpu_heavy))
        s.wait(replica(1, mem_heavy))
        reused, fresh = (
            counts(lrf.decide(s.view())),
            counts(make_scheduler("lrf").decide(s.view())),
        )
        assert list(reused) == list(fresh)
        orders.append(list(reused))
    assert orders == [[1, 0], [0, 1]]
    # the same ids for other jobs (a new run without reset): ranked by the new jobs' demands
    s = scene(capacity=Resources(gpu=4, cpu=64, mem=16))
    s.wait(replica(0, mem_heavy))
    s.wait(replica(1, cpu_heavy))
    assert list(counts(lrf.decide(s.view()))) == [1, 0]


def test_spf_starts_the_smallest_gpu_time_product_first():
    # C (600 GPU-s) first; A (800) does not fit in the 2 GPUs left and is skipped; B (1000) fits
    assert list(counts(make_scheduler("spf").decide(three_jobs_on_four_gpus().view())).items()) == [
        (2, (2, 0)),
        (1, (1, 0)),
    ]


def test_sjf_starts_shortest_first_and_skips_what_does_not_fit():
    s = scene()
    s.wait(gpu(0, 300.0, 2))
    s.wait(gpu(1, 50.0, 8))  # the shortest, but 8 GPUs never fit this 4-GPU server
    s.wait(gpu(2, 100.0, 2))
    s.wait(gpu(3, 200.0, 2))
    # job 1 is skipped (work-conserving), then 100 s and 200 s take the 4 GPUs; 300 s waits
    assert list(counts(make_scheduler("sjf").decide(s.view()))) == [2, 3]


def packing_scene():
    """Two-resource cluster (cpu 10, mem 10) with cpu 8, mem 2 busy: free is (cpu 2, mem 8).

    A = (cpu 2, mem 1), duration 10: alignment (2·2 + 1·8) / 100 = 0.12.
    B = (cpu 1, mem 6), duration 100: alignment (1·2 + 6·8) / 100 = 0.50.
    Only one of them fits: after A, cpu is gone; after B, 1 cpu is left and A needs 2.
    """
    s = scene(capacity=Resources(cpu=10, mem=10))
    s.run(replica(9, Resources(cpu=8, mem=2), submit_s=-1.0), [(0, 1)])
    s.wait(replica(0, Resources(cpu=2, mem=1), work_s=10.0))
    s.wait(replica(1, Resources(cpu=1, mem=6), work_s=100.0))
    return s


def test_packer_starts_the_best_aligned_job():
    assert counts(Packer().decide(packing_scene().view())) == {1: (1, 0)}


def test_sjf_on_the_packing_scene_starts_the_shorter_job():
    assert counts(make_scheduler("sjf").decide(packing_scene().view())) == {0: (1, 0)}


@pytest.mark.parametrize(
    ("knob", "expected"),
    [
        # normalised: alignment A 0.24, B 1; shortness A 1, B 0.1
        (0.5, 0),  # A 0.62 > B 0.55
        (0.8, 1),  # A 0.392 < B 0.82
        (1.0, 1),  # Packer
        (0.0, 0),  # SJF
    ],
)
def test_tetris_star_combines_packing_and_shortness(knob, expected):
    assert list(counts(TetrisStar(knob).decide(packing_scene().view()))) == [expected]


def test_tetris_star_rejects_a_knob_outside_0_1():
    with pytest.raises(ValueError, match="knob"):
        make_scheduler("tetris-star:1.5")


def test_random_is_reproducible_under_its_seed_and_work_conserving():
    def orders(seed: int, rounds: int = 6) -> list[list[int]]:
        policy = RandomOrder(seed)
        out = []
        for _ in range(rounds):
            s = scene(servers=2)  # 8 GPUs, 8 one-GPU jobs: all start, in a random order
            for j in range(8):
                s.wait(gpu(j, 100.0, 1))
            decided = counts(policy.decide(s.view()))
            assert sorted(decided) == list(range(8))
            out.append(list(decided))
        return out

    first = orders(3)
    assert orders(3) == first
    assert orders(4) != first
    assert any(order != sorted(order) for order in first)
    policy = RandomOrder(3)
    policy.rng.random()
    policy.reset()  # a new episode replays the same stream
    s = scene(servers=2)
    for j in range(8):
        s.wait(gpu(j, 100.0, 1))
    assert list(counts(policy.decide(s.view()))) == first[0]


def split_scene():
    """Two 4-GPU servers with 2 GPUs busy on each: a 4-GPU job fits only across both."""
    s = scene(servers=2)
    s.run(gpu(8, 500.0, 2, submit_s=-2.0), [(0, 2)])
    s.run(gpu(9, 500.0, 2, submit_s=-1.0), [(1, 2)])
    s.wait(gpu(0, 100.0, 4))
    return s


def test_servers_needed_fills_the_roomiest_servers_first():
    free = [[1, 99, 99], [3, 99, 99], [2, 99, 99]]
    spec = gpu(0, 1.0, 4)
    assert servers_needed(free, spec, 3) == 1
    assert servers_needed(free, spec, 4) == 2
    assert servers_needed(free, spec, 6) == 3
    assert servers_needed(free, spec, 7) is None


def test_dsif_delays_a_job_exactly_three_times_for_its_best_locality():
    policy = Dsif()
    s = split_scene()
    for _ in range(MAX_DELAYS):
        assert counts(policy.decide(s.view())) == {}
    assert counts(policy.decide(s.view())) == {0: (4, 0)}  # the 4th time it takes what it gets
    assert MAX_DELAYS == 3
    # SIF does not wait
    assert counts(make_scheduler("sif").decide(split_scene().view())) == {0: (4, 0)}


def test_dsif_starts_at_once_when_best_locality_is_free_and_counts_no_delay_for_misfits():
    policy = Dsif()
    s = split_scene()
    assert counts(policy.decide(s.view())) == {}  # one delay
    # a server frees up: the job gets its best locality (one server) at once
    free = scene(servers=2)
    free.run(gpu(8, 500.0, 2, submit_s=-2.0), [(0, 2)])
    free.wait(gpu(0, 100.0, 4))
    assert counts(policy.decide(free.view())) == {0: (4, 0)}
    # a job that does not fit at all waits without using up its delays
    policy = Dsif()
    full = scene(servers=2)
    full.run(gpu(8, 500.0, 3, submit_s=-2.0), [(0, 3)])
    full.run(gpu(9, 500.0, 3, submit_s=-1.0), [(1, 3)])
    full.wait(gpu(0, 100.0, 4))
    for _ in range(5):
        assert counts(policy.decide(full.view())) == {}
    assert policy.delays.get(0, 0) == 0


def saf_scene():
    """Two 4-GPU servers with one GPU busy on each (3 + 3 free).

    A: 3 GPUs, 100 s of work: packs onto one server → actual 100 s.
    B: 4 GPUs, 60 s of work: spans both servers → a quarter speed → actual 240 s.
    SIF picks B (60 < 100), SAF picks A. After either, the other does not fit.
    """
    s = scene(servers=2)
    s.run(gpu(8, 500.0, 1, submit_s=-2.0), [(0, 1)])
    s.run(gpu(9, 500.0, 1, submit_s=-1.0), [(1, 1)])
    s.wait(gpu(0, 100.0, 3))
    s.wait(gpu(1, 60.0, 4))
    return s


def locality_oracle(calls: list[int]):
    def speed(spec: JobSpec, alloc: Allocation) -> float:
        calls.append(spec.job_id)
        return 1.0 if alloc.num_servers <= 1 else 0.25

    return speed


def test_saf_picks_the_shortest_actual_time_on_its_packing_placement():
    calls: list[int] = []
    decision = Saf().decide(saf_scene().view(locality_oracle(calls)))
    assert counts(decision) == {0: (3, 0)}
    placement = decision.targets[0].placement
    assert placement is not None and placement.num_servers == 1
    assert set(calls) == {0, 1}
    assert counts(make_scheduler("sif").decide(saf_scene().view())) == {1: (4, 0)}


def test_saf_is_labelled_an_oracle_and_needs_the_oracle():
    assert Saf.is_oracle
    assert "oracle" in schedulers()["saf"].description
    with pytest.raises(PermissionError):
        Saf().decide(saf_scene().view())


class _FifoWithoutMemory(Fifo):
    """FIFO that re-checks the blocked head at every point (no skipping)."""

    def decide(self, view):  # type: ignore[no-untyped-def]
        self._blocked = None
        return super().decide(view)


@pytest.mark.parametrize("workload", ["sched2", "philly"])
def test_fifo_skipping_a_still_blocked_head_changes_no_start_time(workload: str) -> None:
    import dlsched

    options = {"max_jobs": 400} if workload == "philly" else {}
    starts = []
    for scheduler in (Fifo(), _FifoWithoutMemory()):
        result = dlsched.simulate(workload=workload, scheduler=scheduler, seed=3, **options)
        starts.append({record.job_id: record.start_s for record in result.records})
    assert starts[0] == starts[1]
