"""Issue 30: the controller under chaos (two controller processes, the leader paused past its
lease and SIGTERMed, 500s, stalls, 409s, off-spec replies, dropped watches, jobs finished
mid-round, nodes cordoned and deleted, an invalid DLJob), checked at every change of the fake
API server: at most one writer, no over-commit, no duplicate or orphan pod, no finished job
regrown, every job granted and finished, SIGTERM exits within 5 s releasing the lease."""

from __future__ import annotations

from tests.k8s.chaos_run import FAULTS, run_with_notes


def test_chaos_two_controllers_every_fault_once() -> None:
    figures, notes = run_with_notes(
        seed=7, jobs=60, faults=len(FAULTS), nodes=10, submit_s=12.0, lease_s=4.0
    )
    assert figures["faults_injected"] == len(FAULTS), figures
    bad = {
        key: figures[key]
        for key in (
            "jobs_lost",
            "jobs_never_granted",
            "writes_past_lease",
            "duplicate_pods",
            "orphan_pods",
            "overcommit",
            "finished_jobs_regrown",
            "controller_crashes",
            "tracebacks",
            "sigterm_exits_over_5s",
        )
        if figures[key]
    }
    assert bad == {}, (figures, notes)
    assert figures["max_writers"] == 1, (figures, notes)
    assert figures["leases_released"] >= 1, figures
    assert figures["lease_transitions"] >= 2, figures  # the pause and the SIGTERM moved it
