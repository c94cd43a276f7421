"""Kubeflow static: what Kubeflow's tf-operator does — FIFO, gang, fixed replicas.

Rule: pending TFJobs start in arrival order with exactly the replicas their spec asks for
(``num_workers``), all of a job's replicas together or none (gang placement, the ``kubeflow``
workload's default); the first job that does not fit blocks those behind it, and a running job
is never resized or preempted. Priorities (``JobSpec.priority``) are ignored. This is the
baseline the Kubeflow dynamic scheduler (`kubeflow_dynamic`) replaces.

Source: seed 003 ("Kubeflow use tf-operator as a custom controller to manage job scheduling"),
Kubeflow's tf-operator.
"""

from __future__ import annotations

from dlsched.schedulers.base import Scheduler
from dlsched.schedulers.fifo import Fifo
from dlsched.schedulers.registry import register


class KubeflowStatic(Fifo):
    """tf-operator: FIFO with head-of-line blocking, fixed replica counts, gang placement."""

    name = "kubeflow-static"


@register(
    "kubeflow-static",
    setting="replica (kubeflow)",
    source="Kubeflow tf-operator (seed 003)",
    description="FIFO, gang, fixed replicas: the tf-operator baseline",
)
def _make(_arg: str | None) -> Scheduler:
    return KubeflowStatic()
