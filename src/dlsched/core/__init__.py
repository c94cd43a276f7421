"""Typed domain objects shared by every layer (imports nothing above it)."""

from dlsched.core.cluster import Cluster, Server, usage
from dlsched.core.decision import Allocation, Code, Decision, Status, Target
from dlsched.core.job import Arch, JobRun, JobSpec
from dlsched.core.resources import RESOURCE_NAMES, Resources
from dlsched.core.view import ClusterView, QueueChanges

__all__ = [
    "RESOURCE_NAMES",
    "Allocation",
    "Arch",
    "Cluster",
    "ClusterView",
    "Code",
    "Decision",
    "JobRun",
    "JobSpec",
    "QueueChanges",
    "Resources",
    "Server",
    "Status",
    "Target",
    "usage",
]
