"""Federated DL2 (A3C over cluster processes): a tiny run updates the global policy."""

from __future__ import annotations

import pytest
import torch

from dlsched.papers.dl2.algorithm import Learner
from dlsched.papers.dl2.federated import FederatedPool
from dlsched.papers.dl2.network import Dl2Config, seed_everything

torch.set_num_threads(1)

SMALL = {"servers": 3, "num_jobs": 12, "load": 0.25}


@pytest.mark.slow
def test_two_clusters_update_the_global_policy() -> None:
    cfg = Dl2Config(J=8, hidden=(16, 16), arch="mlp", batch_size=32, slots_per_update=2)
    seed_everything(0)
    learner = Learner.create(cfg)
    before = [p.detach().clone() for p in learner.policy.parameters()]
    value_before = [p.detach().clone() for p in learner.value.parameters()]
    seen: list[int] = []
    with FederatedPool(cfg, 2, "dl2", SMALL, seed=0) as pool:
        pool.train(learner, 5, on_step=lambda _u, st: seen.append(int(st["cluster"])))
        pool.train(learner, 3)  # the pool keeps its processes between calls
        contributions = list(pool.contributions)
    assert learner.updates == 8 == sum(contributions)
    assert all(c >= 1 for c in contributions)  # both clusters' gradients were applied
    assert sorted(set(seen)) == [0, 1] and len(seen) == 5
    after = list(learner.policy.parameters())
    assert all(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    value_after = list(learner.value.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(value_before, value_after, strict=True))
    assert pool.procs == []
