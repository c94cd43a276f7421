"""The incremental priority policies decide exactly as a plain re-rank of the whole queue.

Each policy that keeps its queue sorted between points (`PendingQueue`) is run next to a
reference that sorts every active job at every point, as the policies did before (the
references below are that code), and every decision of the run must be equal: on random
workloads (hypothesis; fixed-GPU and PS jobs, ties in keys, event-driven and slotted, a
stepping driver that skips points), and on the busiest stretch of two Philly virtual clusters.
And FIFO, whose points the simulator skips while it sleeps (``wake = "head-or-free"``), gives
the same run as FIFO asked at every point.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, Arch, ClusterView, Decision, JobRun, JobSpec, Resources, Target
from dlsched.placement import make_placement
from dlsched.schedulers.base import BaseScheduler, Scheduler, WrappingScheduler
from dlsched.schedulers.common import FreeTracker, requested, tasks_that_fit
from dlsched.schedulers.dsif import MAX_DELAYS, Dsif, servers_needed
from dlsched.schedulers.fifo import Fifo
from dlsched.schedulers.key_ordered import KeyOrdered
from dlsched.schedulers.kubeflow_dynamic import KubeflowDynamic, gang_fit, priority_key
from dlsched.schedulers.las import Las
from dlsched.schedulers.lrf import resource_key
from dlsched.schedulers.ordered import start_in_order
from dlsched.schedulers.registry import make_scheduler
from dlsched.schedulers.saf import Saf, pack_allocation
from dlsched.schedulers.sjf import duration_key, duration_key_in
from dlsched.schedulers.spf import gpu_seconds_key
from dlsched.schedulers.srtf import Srtf
from dlsched.schedulers.tiresias import Tiresias
from dlsched.sim import SimConfig, Simulator
from tests.helpers import LinearModel, gpu_job, ps_job, small_cluster

# -- the references: the whole queue sorted at every point --------------------------------------


class RefSorted(BaseScheduler):
    """Non-preemptive: pending jobs sorted by ``key`` at every point."""

    def __init__(self, name: str, key: Callable[[JobRun, ClusterView], Any]) -> None:
        self.name = name
        self.key = key

    def decide(self, view: ClusterView) -> Decision:
        return start_in_order(view, sorted(view.pending, key=lambda r: self.key(r, view)))


def ref_run_in_order(view: ClusterView, runs: list[JobRun]) -> Decision:
    """`run_in_order` as it was before the choosing walk was memoised (a list, every job
    re-placed on a fresh scratch copy at every point)."""
    chooser = FreeTracker(view.cluster, release=list(view.running))
    free = list(chooser.total().as_tuple())
    chosen: list[JobRun] = []
    for run in runs:
        alloc = run.allocation
        workers, ps = (alloc.num_workers, alloc.num_ps) if run.running else requested(run.spec)
        need = run.spec.demand(workers, ps).as_tuple()
        if any(need[r] > free[r] + 1e-9 for r in range(3)):
            continue
        if chooser.take(run.spec, workers, ps):
            chosen.append(run)
            free = [free[r] - need[r] for r in range(3)]
    chosen_ids = {run.job_id for run in chosen}
    tracker = FreeTracker(
        view.cluster, release=[r for r in view.running if r.job_id not in chosen_ids]
    )
    decision = Decision()
    for run in chosen:
        if run.running:
            decision.set(run.job_id, run.allocation.num_workers, run.allocation.num_ps)
    for run in chosen:
        if not run.running:
            workers, ps = requested(run.spec)
            if tracker.take(run.spec, workers, ps):
                decision.set(run.job_id, workers, ps)
    for run in runs:
        if (
            run.running
            and run.job_id not in chosen_ids
            and tracker.take_exact(run.spec, run.allocation)
        ):
            decision.set(run.job_id, run.allocation.num_workers, run.allocation.num_ps)
    return decision


class RefLas(BaseScheduler):
    name = "las"
    preemptive: ClassVar[bool] = True

    def decide(self, view: ClusterView) -> Decision:
        now = view.now_s
        order = sorted(
            view.jobs(), key=lambda r: (r.attained_gpu_s_at(now), r.spec.submit_time_s, r.job_id)
        )
        return ref_run_in_order(view, order)


class RefSrtf(Srtf):
    def decide(self, view: ClusterView) -> Decision:
        jobs = view.jobs()
        now = view.now_s
        if any(run.spec.arch is Arch.PS for run in jobs):
            self.speeds.update(jobs)
        order = sorted(jobs, key=lambda r: (self.remaining_s(r, now), r.spec.submit_time_s))
        return ref_run_in_order(view, order)


class RefTiresias(Tiresias):
    """Tiresias as it was: every waiting job visited and every active job sorted each point."""

    def reset(self) -> None:
        super().reset()
        self._run_started_s = {}
        self._seen_running_s = {}

    def _track(self, view: ClusterView) -> None:
        now = view.now_s
        for run in view.running:
            job = run.job_id
            self._waiting_since_s.pop(job, None)
            self._run_started_s.setdefault(job, self._prev_decision_s)
            self._seen_running_s[job] = now
        for run in view.pending:
            job = run.job_id
            started = self._run_started_s.pop(job, None)
            if started is not None:
                stopped = self._seen_running_s.pop(job)
                self._last_run_s[job] = stopped - started
                self._waiting_since_s[job] = stopped
            since = self._waiting_since_s.get(job)
            last = self._last_run_s.get(job, 0.0)
            if since is not None and last > 0 and now - since >= self.promote_knob * last:
                self._service_offset[job] = run.attained_gpu_s_at(now)
                self._waiting_since_s[job] = now
                self._last_run_s[job] = 0.0
        self._prev_decision_s = now

    def decide(self, view: ClusterView) -> Decision:
        self._track(view)
        now = view.now_s
        order = sorted(
            view.jobs(), key=lambda r: (self.queue_of(r, now), r.spec.submit_time_s, r.job_id)
        )
        return ref_run_in_order(view, order)


class RefDsif(BaseScheduler):
    name = "dsif"

    def reset(self) -> None:
        self.delays: dict[int, int] = {}

    def decide(self, view: ClusterView) -> Decision:
        decision = Decision()
        if not view.pending:
            return decision
        capacity = view.cluster.capacity_array.tolist()
        tracker = FreeTracker(view.cluster)
        for run in sorted(view.pending, key=duration_key):
            spec = run.spec
            workers, ps = requested(spec)
            now = servers_needed(tracker.free, spec, workers)
            if now is None:
                continue
            best = servers_needed(capacity, spec, workers)
            delayed = self.delays.get(run.job_id, 0)
            if best is not None and now > best and delayed < MAX_DELAYS:
                self.delays[run.job_id] = delayed + 1
                continue
            if tracker.take(spec, workers, ps):
                decision.set(run.job_id, workers, ps)
                self.delays.pop(run.job_id, None)
        return decision


class RefSaf(Saf):
    """SAF as it was: every candidate packed afresh at every pick."""

    def decide(self, view: ClusterView) -> Decision:
        decision = Decision()
        free = view.cluster.free_array.tolist()
        candidates = list(view.pending)
        now = view.now_s
        while candidates:
            best: tuple[float, float, int] | None = None
            choice: tuple[int, Allocation] | None = None
            fitting = []
            for run in candidates:
                workers, ps = requested(run.spec)
                alloc = pack_allocation([row[:] for row in free], run.spec, workers, ps)
                if alloc is None:
                    continue
                fitting.append(run)
                speed = view.oracle_speed(run.spec, alloc)
                actual = run.remaining_work(now) / speed if speed > 0 else math.inf
                key = (actual, run.spec.submit_time_s, run.job_id)
                if best is None or key < best:
                    best, choice = key, (run.job_id, alloc)
            if choice is None:
                break
            job_id, alloc = choice
            run = next(r for r in fitting if r.job_id == job_id)
            pack_allocation(free, run.spec, alloc.num_workers, alloc.num_ps)
            decision.targets[job_id] = Target(alloc.num_workers, alloc.num_ps, alloc)
            candidates = [r for r in fitting if r.job_id != job_id]
        return decision


class RefKubeflowDynamic(KubeflowDynamic):
    """The Kubeflow dynamic scheduler as it was: the whole queue sorted, every waiting job's
    gang tried and every running job visited for scale-up at every point."""

    def decide(self, view: ClusterView) -> Decision:
        total = view.cluster.total
        free = view.cluster.free_array.tolist()
        placements = {run.job_id: dict(run.allocation.workers) for run in view.running}
        by_id = {run.job_id: run for run in view.running}
        changed: list[int] = []
        scaled_down: set[int] = set()
        for run in sorted(view.pending, key=lambda r: priority_key(r, total)):
            spec = run.spec
            gang = gang_fit(free, spec, spec.num_workers)
            if gang is None:
                gang = self._scale_down(free, placements, by_id, run, total, changed, scaled_down)
            if gang is None:
                continue
            for node, n in gang.items():
                row = free[node]
                for r in range(3):
                    row[r] -= spec.worker_demand.as_tuple()[r] * n
            placements[run.job_id] = dict(gang)
            by_id[run.job_id] = run
            changed.append(run.job_id)
        for run in sorted(by_id.values(), key=lambda r: priority_key(r, total)):
            if run.job_id in scaled_down:
                continue
            spec = run.spec
            where = placements[run.job_id]
            need = spec.worker_demand.as_tuple()
            grown = False
            while sum(where.values()) < spec.max_workers:
                fits = (i for i, row in enumerate(free) if tasks_that_fit(row, need) > 0)
                node = next(fits, None)
                if node is None:
                    break
                for r in range(3):
                    free[node][r] -= need[r]
                where[node] = where.get(node, 0) + 1
                grown = True
            if grown and run.job_id not in changed:
                changed.append(run.job_id)
        # the whole desired state: every running job, unchanged ones at their counts
        decision = Decision()
        for run in view.running:
            if run.job_id not in changed:
                decision.set(run.job_id, run.allocation.num_workers)
        for job_id in changed:
            if job_id not in decision.targets:
                alloc = Allocation.of(placements[job_id].items())
                decision.targets[job_id] = Target(alloc.num_workers, 0, alloc)
        return decision


PAIRS: dict[str, tuple[Callable[[], Scheduler], Callable[[], Scheduler]]] = {
    "sif": (lambda: make_scheduler("sif"), lambda: RefSorted("sif", lambda r, _v: duration_key(r))),
    "sjf": (lambda: make_scheduler("sjf"), lambda: RefSorted("sjf", lambda r, _v: duration_key(r))),
    "spf": (
        lambda: make_scheduler("spf"),
        lambda: RefSorted("spf", lambda r, _v: gpu_seconds_key(r)),
    ),
    "lrf": (
        lambda: make_scheduler("lrf"),
        lambda: RefSorted("lrf", lambda r, v: resource_key(r, v.cluster.total)),
    ),
    "dsif": (Dsif, RefDsif),
    "las": (Las, RefLas),
    "srtf": (Srtf, RefSrtf),
    "saf": (Saf, RefSaf),
    "kubeflow-dynamic": (KubeflowDynamic, RefKubeflowDynamic),
    "tiresias": (lambda: Tiresias((60.0, 400.0), 2.0), lambda: RefTiresias((60.0, 400.0), 2.0)),
}


# -- running both --------------------------------------------------------------------------------


class Recorder(WrappingScheduler):
    """Keeps every decision (job id → counts and placement) of the scheduler it wraps, as the
    whole desired state (`Decision.whole`: a changes-only decision restated)."""

    def __init__(self, inner: Scheduler) -> None:
        super().__init__(inner)
        self.decisions: list[dict[int, tuple[int, int, Any]]] = []

    def decide(self, view: ClusterView) -> Decision:
        decision = self.inner.decide(view)
        whole = decision.whole(view.running)
        self.decisions.append(
            {job: (t.num_workers, t.num_ps, t.placement) for job, t in whole.targets.items()}
        )
        return decision


class SkipEvery(WrappingScheduler):
    """Decides nothing at every ``n``-th point without asking the policy (so the policy misses
    that point's queue changes, as a driver that steps past points would make it)."""

    def __init__(self, inner: Scheduler, n: int) -> None:
        super().__init__(inner)
        self.n = n
        self.points = 0

    def reset(self) -> None:
        super().reset()
        self.points = 0

    def decide(self, view: ClusterView) -> Decision:
        self.points += 1
        if self.points % self.n == 0:
            return Decision()
        return self.inner.decide(view)


def _run(
    jobs: list[JobSpec], scheduler: Scheduler, servers: int, skip: int, **config: Any
) -> tuple[list[Any], list[Any]]:
    recorder = Recorder(SkipEvery(scheduler, skip) if skip else scheduler)
    sim = Simulator(
        jobs,
        small_cluster(servers),
        LinearModel(),
        recorder,
        make_placement("pack"),
        SimConfig(max_idle_retries=20, **config),
    )
    result = sim.run()
    records = [dataclasses.astuple(r) for r in result.records]
    return recorder.decisions, records


def _jobs(seed: int, n: int, ps_share: float, cpu_heavy: bool = False) -> list[JobSpec]:
    """Random jobs with many ties (few distinct submit times and durations). ``cpu_heavy``:
    about half the GPU jobs of up to 4 workers take 6 of a server's 16 CPUs per worker, so
    where tasks sit matters, not only how much is free in total."""
    rng = np.random.default_rng(seed)
    jobs: list[JobSpec] = []
    for i in range(n):
        submit = float(rng.integers(0, 8)) * 100.0
        if rng.random() < ps_share:
            jobs.append(ps_job(i, submit, float(rng.integers(1, 4)) * 5, int(rng.integers(1, 4))))
        else:
            duration = float(rng.choice([50.0, 100.0, 300.0, 1000.0]))
            job = gpu_job(i, submit, duration, int(rng.choice([1, 1, 2, 3, 4, 8])))
            if cpu_heavy and job.num_workers <= 4 and rng.random() < 0.5:
                job = dataclasses.replace(job, worker_demand=Resources(gpu=1, cpu=6, mem=4))
            jobs.append(job)
    return jobs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from(sorted(PAIRS)),
    seed=st.integers(0, 10_000),
    n=st.integers(1, 40),
    servers=st.integers(2, 3),
    ps_share=st.sampled_from([0.0, 0.0, 0.3]),
    slotted=st.booleans(),
    skip=st.sampled_from([0, 0, 3]),
    cpu_heavy=st.booleans(),
)
def test_incremental_policy_decides_as_the_full_re_rank(
    policy: str,
    seed: int,
    n: int,
    servers: int,
    ps_share: float,
    slotted: bool,
    skip: int,
    cpu_heavy: bool,
) -> None:
    if policy == "kubeflow-dynamic":
        ps_share = 0.0  # it places workers only (replica jobs): PS jobs never train
    jobs = _jobs(seed, n, ps_share, cpu_heavy)
    config: dict[str, Any] = {"interval_s": 150.0} if slotted else {}
    make, make_ref = PAIRS[policy]
    ours = _run(jobs, make(), servers, skip, **config)
    ref = _run(jobs, make_ref(), servers, skip, **config)
    assert ours[0] == ref[0]  # every decision
    assert ours[1] == ref[1]  # every job's record


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("policy", ["las", "srtf", "tiresias", "saf"])
def test_policy_with_placement_bound_jobs_decides_as_the_reference(policy: str, seed: int) -> None:
    """Where tasks sit decides what fits (CPU-heavy workers), so a choosing walk resumed from
    the wrong scratch state would choose differently, and SAF's packings kept per shape would
    be wrong if the shape left out the demands."""
    jobs = _jobs(seed, 40, 0.0, cpu_heavy=True)
    make, make_ref = PAIRS[policy]
    assert _run(jobs, make(), 3, 0) == _run(jobs, make_ref(), 3, 0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kubeflow_dynamic_with_utilities_decides_as_before(seed: int) -> None:
    """On its own workload (utilities 1–3: scale-down and scale-up happen) the queue is only
    kept, the decisions are the old code's."""
    from dlsched.workloads.registry import make_workload

    workload = make_workload("kubeflow", seed=seed)

    def run(scheduler: Scheduler) -> tuple[list[Any], list[Any]]:
        recorder = Recorder(scheduler)
        sim = Simulator(
            list(workload.jobs),
            workload.make_cluster(),
            workload.model,
            recorder,
            make_placement(workload.placement),
            SimConfig(),
        )
        result = sim.run()
        return recorder.decisions, [dataclasses.astuple(r) for r in result.records]

    assert run(KubeflowDynamic()) == run(RefKubeflowDynamic())


def test_the_walk_memo_is_not_reused_on_another_cluster() -> None:
    """The same policy asked about another cluster (no reset, no queue changes): the last
    walk's outcomes do not carry over (an 8-GPU job fits two 4-GPU servers, not one)."""
    las = Las()
    job = gpu_job(0, 0.0, 100.0, 8)
    two = ClusterView(0.0, small_cluster(2), [JobRun(job)], [])
    one = ClusterView(0.0, small_cluster(1), [JobRun(job)], [])
    assert las.decide(one).targets == {}
    assert list(las.decide(two).targets) == [0]


def test_the_emptied_cluster_is_taken_afresh_once_something_was_given_back() -> None:
    """The walk's start (the cluster with every running job given back) is reused only while
    the cluster's version is the same: here resources held outside the running jobs (as a
    backend's other tenants may) are given back, and the 4-GPU job with the least service
    now fits where the running 2-GPU job is, which is preempted."""
    las = Las()
    cluster = small_cluster(1)  # 4 GPUs
    other = gpu_job(9, 0.0, 100.0, 2)
    assert cluster.allocate(other, Allocation.of([(0, 2)])).ok
    held = gpu_job(1, 0.0, 10_000.0, 2)
    assert cluster.allocate(held, Allocation.of([(0, 2)])).ok
    running = JobRun(held, allocation=Allocation.of([(0, 2)]), attained_gpu_s=1000.0)
    waiting = JobRun(gpu_job(0, 0.0, 100.0, 4))
    assert las.decide(ClusterView(0.0, cluster, [waiting], [running])).targets == {}
    cluster.release(other)
    targets = las.decide(ClusterView(1.0, cluster, [waiting], [running])).targets
    assert {job: (t.num_workers, t.num_ps) for job, t in targets.items()} == {0: (4, 0), 1: (0, 0)}


def test_the_queue_follows_the_changes_and_rebuilds_only_when_it_must() -> None:
    jobs = _jobs(3, 40, 0.0)
    sif = KeyOrdered("sif", duration_key_in)
    _run(jobs, sif, 2, 0)
    assert sif.queue.rebuilds == 1  # the first point only
    skipping = KeyOrdered("sif", duration_key_in)
    _run(jobs, skipping, 2, 3)
    assert skipping.queue.rebuilds > 1  # after every point it missed


def test_a_shape_marked_dead_is_skipped_whole() -> None:
    """Once the loop marks a shape dead, the merge drops the rest of that shape's jobs without
    visiting them (three waiting 8-GPU jobs: only the first is visited at each point)."""
    jobs = [gpu_job(0, 0.0, 100.0, 1)] + [gpu_job(i, 1.0, 100.0, 8) for i in (1, 2, 3)]
    calls: list[list[int]] = []

    class Watching(KeyOrdered):
        def decide(self, view: ClusterView) -> Decision:
            queue = self.queue.update(view)
            dead: set[Any] = set()
            calls.append([])
            for run, shape in queue.candidates(dead):
                calls[-1].append(run.job_id)
                if run.spec.num_workers == 8:
                    dead.add(shape)
            return super().decide(view)

    _run(jobs, Watching("sif", duration_key_in), 2, 0)
    assert calls[:2] == [[0], [1]]  # at t=1 job 0 holds a GPU: 1 is tried, 2 and 3 are not
    assert all(len(call) == 1 for call in calls)


# -- Philly virtual clusters: the busiest stretch ------------------------------------------------


@pytest.mark.parametrize(
    "vc",
    [pytest.param("b436b2", marks=pytest.mark.slow), "6214e9"],  # b436b2: the larger VC
)
@pytest.mark.parametrize("policy", sorted(PAIRS))
def test_incremental_policy_equals_re_rank_on_a_philly_vc(vc: str, policy: str) -> None:
    from dlsched.workloads.registry import make_workload

    workload = make_workload(f"philly:{vc}", seed=0)
    jobs = list(workload.jobs[:600])  # enough for thousands of points with hundreds waiting
    make, make_ref = PAIRS[policy]
    if policy == "tiresias":
        make, make_ref = Tiresias, RefTiresias

    def run(scheduler: Scheduler) -> tuple[list[Any], list[Any]]:
        recorder = Recorder(scheduler)
        sim = Simulator(
            jobs,
            workload.make_cluster(),
            workload.model,
            recorder,
            make_placement(workload.placement),
            SimConfig(),
        )
        result = sim.run()
        return recorder.decisions, [dataclasses.astuple(r) for r in result.records]

    ours, ref = run(make()), run(make_ref())
    assert ours[1] == ref[1]
    assert ours[0] == ref[0]


def test_keys_of_waiting_jobs_do_not_depend_on_time() -> None:
    """What the queue relies on: a waiting job's service and remaining work stay put."""
    run = JobRun(gpu_job(0, 0.0, 100.0, 2), attained_gpu_s=37.5, progress_s=12.0)
    assert run.attained_gpu_s_at(10.0) == run.attained_gpu_s_at(1e9) == 37.5
    assert run.remaining_work(10.0) == run.remaining_work(1e9) == 88.0


# -- the engine skips FIFO's points while its blocked head and the free resources stay put ------


class CountingFifo(Fifo):
    """FIFO counting its calls; ``wake`` as given."""

    def __init__(self, wake: str) -> None:
        super().__init__()
        self.wake = wake  # type: ignore[misc]
        self.calls = 0

    def decide(self, view: ClusterView) -> Decision:
        self.calls += 1
        return super().decide(view)


def _fifo_run(jobs: list[JobSpec], fifo: CountingFifo, servers: int) -> tuple[Any, ...]:
    sim = Simulator(
        jobs,
        small_cluster(servers),
        LinearModel(),
        fifo,
        make_placement("pack"),
        SimConfig(max_idle_retries=20),
    )
    result = sim.run()
    records = [dataclasses.astuple(r) for r in result.records]
    return records, result.decisions, result.events


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), servers=st.integers(2, 3))
def test_fifo_asleep_gives_the_same_run_with_fewer_calls(seed: int, n: int, servers: int) -> None:
    jobs = _jobs(seed, n, 0.2)
    every, sleepy = CountingFifo("every-point"), CountingFifo("head-or-free")
    assert _fifo_run(jobs, sleepy, servers) == _fifo_run(jobs, every, servers)
    assert sleepy.calls <= every.calls


def test_fifo_is_not_asked_while_its_head_is_blocked() -> None:
    # one 8-GPU job holds the cluster; a second waits at the head; ten 1-GPU jobs arrive behind
    jobs = [gpu_job(0, 0.0, 1000.0, 8), gpu_job(1, 1.0, 10.0, 8)]
    jobs += [gpu_job(i, 2.0 + i, 10.0, 1) for i in range(2, 12)]
    every, sleepy = CountingFifo("every-point"), CountingFifo("head-or-free")
    assert _fifo_run(jobs, sleepy, 2) == _fifo_run(jobs, every, 2)
    assert every.calls - sleepy.calls == 10  # the ten arrivals behind the blocked head


@pytest.mark.parametrize("policy", sorted(PAIRS))
def test_incremental_policies_pickle_after_a_run(policy: str) -> None:
    """Their queues hold no lambdas: a policy can be shipped to a worker process mid-sweep."""
    import pickle

    scheduler = PAIRS[policy][0]()
    _run(_jobs(1, 20, 0.0), scheduler, 2, 0)
    assert type(pickle.loads(pickle.dumps(scheduler))) is type(scheduler)
