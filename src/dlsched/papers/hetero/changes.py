"""`place_on_types`'s decision stated as changes only, where that is provably the same.

On a cluster of one GPU type whose capacities and job demands are whole numbers, a chosen
running job at its full size is a stayer (`place_on_types` gives it its own allocation back,
which the executor skips), a running job not chosen is suspended, and the chosen waiting jobs
are placed on what the stayers hold. Those holdings are sums of whole numbers, exact in any
order, so they equal the cluster's usage less the suspended jobs' (what `place_on_types` sums
stayer by stayer). `changes_only` lists the suspensions and the starts (in `place_on_types`'s
order), and the executor applies exactly what the whole-state decision made it apply, at a
cost of what changes rather than of every running job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dlsched.core import Allocation, ClusterView, Decision, JobRun, Target
from dlsched.core.cluster import Cluster
from dlsched.placement.typed import Fits, _fit_counted, _room, scale_of


class ChangesOnly:
    """Places a point's chosen pairs as a changes-only decision, where that is the same."""

    def __init__(self) -> None:
        self._cluster: Cluster | None = None
        self._ok = False
        self._servers_of: dict[str, list[int]] = {}

    def _suits(self, cluster: Cluster, server_types: Sequence[str]) -> bool:
        if cluster is not self._cluster:
            self._cluster = cluster
            whole = all(float(x).is_integer() for row in cluster.capacity_rows for x in row)
            self._ok = whole and len(set(server_types)) == 1
            self._servers_of = {server_types[0]: list(range(cluster.num_servers))}
        return self._ok

    def place(
        self,
        view: ClusterView,
        server_types: Sequence[str],
        chosen: list[tuple[JobRun, str]],
        whole_jobs: bool,
        stayers: int = 0,
        left_out: Callable[[], list[JobRun] | None] | None = None,
    ) -> Decision | None:
        """The decision, or None where it cannot be stated so (then `place_on_types`).

        Args:
            whole_jobs: every job of the run asks whole amounts (and no parameter server).
            stayers: how many running jobs, not in ``chosen``, are chosen too and known to
                run at their full size (`RankedPairs.stayers`): kept without looking at them.
            left_out: where some running job is not chosen, gives those (in any order: the
                executor suspends in running order, and what they give back sums exactly);
                None from it, or none given: they are found in ``view.running`` (then
                ``stayers`` must be 0).
        """
        cluster = view.cluster
        if not whole_jobs or not self._suits(cluster, server_types):
            return None
        starters: list[tuple[JobRun, str]] = []
        kept: set[int] = set()
        for run, t in chosen:
            alloc = run.allocation
            if not alloc.workers:
                starters.append((run, t))
                continue
            need = run.spec.num_workers  # `scale_of` inlined: called for every running job
            if need < 1:
                need = 1
            if alloc.num_workers == need and not alloc.ps:
                kept.add(run.job_id)
            else:
                return None  # a mover: `place_on_types` decides
        targets: dict[int, Target] = {}
        suspended: list[JobRun] = []
        if len(kept) + stayers != len(view.running):
            out = None if left_out is None else left_out()
            if out is None:
                assert not stayers
                out = [run for run in view.running if run.job_id not in kept]
            suspended = out
        for run in suspended:
            targets[run.job_id] = Target(0, 0)
        if len(starters) == 1:
            run, t = starters[0]
            new = self._fit_alone(cluster, run, t, suspended)
            if new is not None:
                targets[run.job_id] = Target(new.num_workers, new.num_ps, new)
        elif starters:
            starters.sort(key=lambda c: -scale_of(c[0].spec))  # stable, as `place_on_types`
            cap = cluster.capacity_rows
            used = [
                [c[0] - f[0], c[1] - f[1], c[2] - f[2]]
                for c, f in zip(cap, cluster.free_rows(), strict=True)
            ]
            fits = Fits(server_types, self._servers_of, cap, used)
            for run in suspended:
                fits.take(run.spec, run.allocation, -1.0)
            for run, t in starters:
                new = fits.fit(run.spec, t)
                if new is not None:
                    fits.take(run.spec, new, 1.0)
                    targets[run.job_id] = Target(new.num_workers, new.num_ps, new)
        return Decision(targets, changes_only=True)

    def _fit_alone(
        self, cluster: Cluster, run: JobRun, t: str, suspended: list[JobRun]
    ) -> Allocation | None:
        """`Fits.fit` of the one job placed, once the ``suspended`` jobs gave back what they
        hold: the cluster's own counts of the tasks that fit on each server (`Cluster.fits`,
        kept between points), counted again (`_room`, on `Fits`' books) on the servers given
        back to. With whole capacities and demands, capacity less (capacity less free) is
        the free amount exactly, so the kept counts are `Fits`' (clamped at 0: the same
        fits; a demand of no resource fits any number of tasks on every server either way)."""
        servers = self._servers_of.get(t)
        if servers is None:
            return None  # no server of its type (`Fits`: an empty list, no fit)
        spec = run.spec
        demand = spec.worker_demand.as_tuple()
        want = spec.num_workers  # `scale_of`
        counts = cluster.fits(demand)
        if suspended:
            cap, free = cluster.capacity_rows, cluster.free_rows()
            used: dict[int, list[float]] = {}  # `Fits.take`'s books, on the servers touched
            for job in suspended:
                alloc, held = job.allocation, job.spec
                for tasks, need in (
                    (alloc.workers, held.worker_demand),
                    (alloc.ps, held.ps_demand),
                ):
                    g, c, m = need.as_tuple()
                    for server, n in tasks:
                        row = used.get(server)
                        if row is None:
                            have, left = cap[server], free[server]
                            row = used[server] = [
                                have[0] - left[0],
                                have[1] - left[1],
                                have[2] - left[2],
                            ]
                        row[0] += -1.0 * g * n
                        row[1] += -1.0 * c * n
                        row[2] += -1.0 * m * n
            if demand[0] > 0 or demand[1] > 0 or demand[2] > 0:
                counts = list(counts)  # the servers are all of them, in order (`_suits`)
                for server, row in used.items():
                    counts[server] = _room(demand, cap[server], row)
        return _fit_counted(counts, servers, want if want > 1 else 1)
