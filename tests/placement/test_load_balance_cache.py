"""`LoadBalance` keeps servers' shares between calls: a reused instance places as a fresh one."""

from __future__ import annotations

import random

from dlsched.core import Allocation, Arch, Cluster, JobSpec, Resources, Server
from dlsched.placement import LoadBalance


def test_a_reused_instance_places_as_fresh_ones_while_the_cluster_changes() -> None:
    rng = random.Random(7)
    reused = LoadBalance()
    placed = 0
    for _ in range(60):
        servers = [
            Server(i, Resources(rng.choice([0, 4, 8]), rng.choice([8, 64]), rng.choice([32, 512])))
            for i in range(rng.randint(1, 20))
        ]
        a, b = Cluster(servers), Cluster(list(servers))
        specs = []
        for j in range(30):
            w = rng.randint(1, 5)
            spec = JobSpec(
                job_id=j,
                submit_time_s=0.0,
                model="m",
                arch=Arch.PS,
                total_work=1.0,
                worker_demand=Resources(rng.choice([0, 1, 2]), rng.choice([1, 4]), 4.0),
                ps_demand=Resources(0, 1, 2.0),
                num_workers=w,
                num_ps=1,
                min_workers=1,
                max_workers=w,
                max_ps=1,
            )
            fresh = LoadBalance().place(a, spec, Allocation.EMPTY, w, 1)
            kept = reused.place(b, spec, Allocation.EMPTY, w, 1)
            assert repr(kept) == repr(fresh)
            if isinstance(fresh, Allocation):
                assert a.allocate(spec, fresh).ok and b.allocate(spec, kept).ok
                specs.append(spec)
                placed += 1
            if specs and rng.random() < 0.3:  # usage given back: rows change between calls
                gone = specs.pop(rng.randrange(len(specs)))
                a.release(gone)
                b.release(gone)
    assert placed > 500
