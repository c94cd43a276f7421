"""`place_on_types` gives the very targets of the plain version it replaced (71cc9c1): every
mover tried again on every pass, `tasks_that_fit` called per server. The fast one skips the fit
of a shape (demand, size) that failed on a type nothing was taken from or given back to since,
and inlines the fit."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.core import Allocation, Arch, Cluster, Decision, JobRun, JobSpec, Resources, Target
from dlsched.core.cluster import tasks_that_fit
from dlsched.core.decision import is_suspension
from dlsched.placement.typed import place_changes, place_on_types, scale_of


def _plain_place(
    view: Any, server_types: Sequence[str], chosen: list[tuple[JobRun, str]]
) -> Decision:
    cap = view.cluster.capacity_rows
    chosen_ids = {run.job_id for run, _ in chosen}
    used = [[0.0, 0.0, 0.0] for _ in range(len(cap))]
    for run in view.running:
        if run.job_id in chosen_ids:
            _plain_add(used, run.spec, run.allocation, 1.0)
    servers_of: dict[str, list[int]] = {}
    for s, t in enumerate(server_types):
        servers_of.setdefault(t, []).append(s)
    targets: dict[int, Target] = {}
    movers, starters = [], []
    for run, t in sorted(chosen, key=lambda c: -scale_of(c[0].spec)):
        alloc = run.allocation
        same_type = all(server_types[s] == t for s, _ in alloc.workers)
        if alloc.workers and same_type and alloc.num_workers == scale_of(run.spec):
            targets[run.job_id] = Target(alloc.num_workers, alloc.num_ps)
            continue
        (movers if alloc.workers else starters).append((run, t))
    pending = movers
    while pending:
        later = []
        for run, t in pending:
            new = _plain_fit(run.spec, servers_of.get(t, []), cap, used)
            if new is None:
                later.append((run, t))
                continue
            _plain_add(used, run.spec, run.allocation, -1.0)
            _plain_add(used, run.spec, new, 1.0)
            targets[run.job_id] = Target(new.num_workers, new.num_ps, new)
        if len(later) == len(pending):
            break
        pending = later
    for run, t in starters:
        new = _plain_fit(run.spec, servers_of.get(t, []), cap, used)
        if new is not None:
            _plain_add(used, run.spec, new, 1.0)
            targets[run.job_id] = Target(new.num_workers, new.num_ps, new)
    return Decision(targets)


def _plain_add(used: list[list[float]], spec: JobSpec, alloc: Allocation, sign: float) -> None:
    for tasks, demand in ((alloc.workers, spec.worker_demand), (alloc.ps, spec.ps_demand)):
        g, c, m = demand.as_tuple()
        for server, n in tasks:
            used[server][0] += sign * g * n
            used[server][1] += sign * c * n
            used[server][2] += sign * m * n


def _plain_fit(
    spec: JobSpec, servers: list[int], cap: list[list[float]], used: list[list[float]]
) -> Allocation | None:
    need = spec.worker_demand.as_tuple()
    want = scale_of(spec)
    room = []
    for s in servers:
        free = [cap[s][0] - used[s][0], cap[s][1] - used[s][1], cap[s][2] - used[s][2]]
        n = tasks_that_fit(free, need) if any(need) else want
        if n > 0:
            room.append((n, s))
    single = [(n, s) for n, s in room if n >= want]
    if single:
        return Allocation.of([(min(single)[1], want)])
    placed: list[tuple[int, int]] = []
    for n, s in sorted(room, key=lambda r: (-r[0], r[1])):
        placed.append((s, min(n, want - sum(k for _, k in placed))))
        if sum(k for _, k in placed) == want:
            return Allocation.of(placed)
    return None


@st.composite
def rounds(draw: st.DrawFn) -> tuple[Any, list[str], list[tuple[JobRun, str]]]:
    """A typed cluster, jobs running on it (within capacity) and a round's choice of jobs and
    types, many of them moving between types."""
    types = ["v100", "p100", "k80"][: draw(st.integers(1, 3))]
    server_types = [draw(st.sampled_from(types)) for _ in range(draw(st.integers(1, 8)))]
    gpus = [float(draw(st.sampled_from([1, 2, 4, 8]))) for _ in server_types]
    cpu = draw(st.sampled_from([0.0, 1.0, 2.5]))
    free = list(gpus)
    runs, chosen = [], []
    for job_id in range(draw(st.integers(0, 24))):
        scale = draw(st.sampled_from([1, 1, 1, 2, 4]))
        spec = JobSpec(
            job_id,
            0.0,
            "A3C",
            Arch.ALLREDUCE,
            1.0,
            Resources(1.0, cpu),
            Resources(),
            scale,
            0,
            scale,
            scale,
        )
        workers: list[tuple[int, int]] = []
        if draw(st.booleans()):  # running: on servers with room, maybe not its full size
            for s in draw(st.permutations(range(len(gpus)))):
                take = min(int(free[s]), scale - sum(n for _, n in workers))
                if take > 0 and draw(st.booleans()):
                    workers.append((s, take))
                    free[s] -= take
        run = JobRun(spec, Allocation.of(workers))
        runs.append(run)
        if draw(st.booleans()):
            chosen.append((run, draw(st.sampled_from(types))))
    cluster = SimpleNamespace(capacity_rows=[[g, 64.0, 64.0] for g in gpus], num_servers=len(gpus))
    view = SimpleNamespace(cluster=cluster, running=[r for r in runs if r.allocation.workers])
    return view, server_types, chosen


@settings(max_examples=200, deadline=None)
@given(rounds())
def test_place_on_types_gives_the_plain_versions_targets(
    case: tuple[Any, list[str], list[tuple[JobRun, str]]],
) -> None:
    view, server_types, chosen = case
    assert place_on_types(view, server_types, chosen) == _plain_place(view, server_types, chosen)


@settings(max_examples=200, deadline=None)
@given(rounds())
def test_place_changes_states_the_same_changes(
    case: tuple[Any, list[str], list[tuple[JobRun, str]]],
) -> None:
    """`place_changes` on a real cluster holding the running jobs: None exactly where some
    amount held is not whole; else the plain version's moves and starts in its order (with its
    placements) and a suspension for every running job it leaves out, nothing else."""
    view, server_types, chosen = case
    cluster = Cluster([Resources(*row) for row in view.cluster.capacity_rows], server_types)
    for run in view.running:
        assert cluster.allocate(run.spec, run.allocation).ok
    real = SimpleNamespace(cluster=cluster, running=view.running)
    got = place_changes(real, server_types, chosen)  # type: ignore[arg-type]
    whole = all(  # every amount held (a task's demand times the tasks on a server)
        float(x * n).is_integer()
        for run in view.running
        for _, n in run.allocation.workers
        for x in run.spec.worker_demand.as_tuple()
    )
    assert (got is None) == (not whole)
    if got is None:
        return
    plain = _plain_place(view, server_types, chosen)
    assert got.changes_only
    changes = [(j, t) for j, t in got.targets.items() if not is_suspension(t)]
    assert changes == [(j, t) for j, t in plain.targets.items() if t.placement is not None]
    suspended = {j for j, t in got.targets.items() if is_suspension(t)}
    assert suspended == {r.job_id for r in view.running if r.job_id not in plain.targets}
