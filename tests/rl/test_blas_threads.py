"""A learned policy decides with one BLAS thread (`dlsched.rl.blas_threads`, issue 34 point 5):
threads made DL2's tiny products wait 30 ms each on a busy machine (dl2 on pollux crawled)."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.core import Decision
from dlsched.rl.policy_scheduler import PolicyScheduler


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def test_decide_runs_with_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("threadpoolctl")
    np.ones((2, 2)) @ np.ones((2, 2))  # NumPy's BLAS is loaded
    seen: list[list[int]] = []

    def record(self: PolicyScheduler, view: object) -> Decision:
        seen.append(_blas_threads())
        return Decision()

    monkeypatch.setattr(PolicyScheduler, "_decide", record)
    scheduler = PolicyScheduler("probe", encoder=None, net=lambda obs: obs, preemptive=False)  # type: ignore[arg-type]
    before = _blas_threads()
    assert scheduler.decide(None) == Decision()  # type: ignore[arg-type]
    assert seen == [[1] * len(before)] and before  # limited inside ...
    assert _blas_threads() == before  # ... and given back after
