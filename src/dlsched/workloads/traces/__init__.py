"""Trace loaders: the packaged Microsoft Philly trace and your own CSV/Parquet traces.

Every loader returns a `Workload` of all-reduce GPU jobs (`Arch.ALLREDUCE`) that run under the
`Locality` throughput model with ``pack`` placement, scheduled on every arrival and completion.

**Generic traces** (`load_trace`): a CSV (``.csv``, ``.csv.gz``, ``.csv.bz2``, ``.csv.xz``,
``.csv.zst``) or Parquet (``.parquet``, ``.pq``) table, one job per row. Column names are matched
after trimming spaces and lower-casing.

=================  ========  ================================================================
column             required  meaning and rule
=================  ========  ================================================================
``submit_time``    yes       submission time: seconds (any origin; shifted so the first job
                             arrives at 0) or ISO-8601 dates (``2017-10-09 07:01:55``);
                             >= 0 and at most `MAX_SPAN_S` after the first job
``duration``       yes       seconds the job runs with all its GPUs at its best placement;
                             > 0 and at most `MAX_DURATION_S` (10 years)
``num_gpus``       yes       GPUs the job asks for: a whole number, >= 1, at most
                             `MAX_GPUS_PER_JOB` and at most the cluster's GPUs
``job_id``         no        non-negative whole number, unique; default: the 0-based data row
``model``          no        a model of `locality.SENSITIVITY`; default: drawn (see below)
``priority``       no        any finite number, larger is more important; default 0
``min_replicas``   no        fewest GPUs the job runs with, 1..num_gpus; default num_gpus
``max_replicas``   no        most GPUs the job can use, num_gpus..`MAX_GPUS_PER_JOB`;
                             default num_gpus
``cpu``            no        CPU cores of **each GPU worker**, >= 0, at most a server's;
                             default `CPU_PER_GPU`
``mem_gb``         no        memory (GB) of **each GPU worker**, >= 0, at most a server's;
                             default `MEM_GB_PER_GPU`
``num_workers``    no        must equal ``num_gpus`` (one GPU per worker)
``user``           no        who submitted the job (any text; empty: unknown), read only by
                             the per-user fairness of a run's summary (`dlsched.sim.fairness`)
``num_ps``         no        must be 0: parameter-server jobs are not supported here
``epochs``         no        ignored with a warning: a trace job's work is its duration
``status``         no        read only by ``drop_status`` (e.g. ``failed,killed``: those rows
                             are left out, counted); otherwise every row is simulated
=================  ========  ================================================================

**Units, status, window and split** (`dlsched.workloads.traces.selection`): ``time_unit`` /
``duration_unit`` (``ms``, ``s``, ``min``, ``h``, ``d``; default seconds, with a warning when a
column's name says otherwise), ``drop_status``, ``start``/``end`` and
``split="0.6,0.2,0.2"`` with ``part="train"|"validation"|"test"`` (jobs cut in submission
order; the cluster is sized before the cut, so every part runs on the same cluster).

Each valid row becomes ``JobSpec(arch=Arch.ALLREDUCE, total_work=duration,
worker_demand=Resources(gpu=1, cpu=cpu, mem=mem_gb), num_workers=num_gpus,
min_workers=min_replicas, max_workers=max_replicas, priority=priority)``: work is measured in
seconds at the best placement, so `Locality` slows a job down only when it spans servers. Only
fixed-size and replica-elastic GPU jobs are supported; parameter-server jobs (``num_ps > 0``)
are rejected row by row with a message pointing at the ``dl2`` workload. Other columns (for
example Philly's ``gpu_time`` and ``cluster``) are ignored and listed in
``Workload.params["ignored_columns"]``.

**Row numbers** in messages are what you see in the file: for CSV the line number with the header
as row 1 (so the first job is row 2; blank lines count but are not jobs); for Parquet the 1-based
record number (the first job is row 1). Errors are one line, e.g.
``trace.csv row 17, column duration: -5 is negative``.

**Bad rows**: with ``on_bad_row="fail"`` (default) the first bad row raises `TraceError`, saying
how many other rows are bad too; with ``"skip"`` every bad row is left out, and the count and
reasons are logged (a warning with the first few) and recorded in ``Workload.params``
(``skipped_rows``; ``skip_reasons``, the first `MAX_REASONS_KEPT`). Blank CSV lines (no value
in any column) are not jobs; they are counted in ``params["blank_rows"]``.

**Models**: without a ``model`` column, each job's model is drawn with
``numpy.random.default_rng(seed)``: a category with the probabilities of
`locality.CATEGORY_MIX`, then one of that category's models (`locality.CATEGORY`) uniformly. One
draw is made per data row in file order, before any row is skipped or filtered, so a job's model
does not depend on which other rows are bad, on a Philly VC filter or time window, or on
``max_jobs``.

**Cluster**: ``servers`` servers of ``gpus_per_server`` GPUs, `CPU_PER_GPU` cores and
`MEM_GB_PER_GPU` GB per GPU. With ``servers=None`` the cluster is sized to the trace (see
`size_cluster`): enough servers for the largest job, and enough GPUs that the trace's average
GPU demand (total GPU-seconds over the trace's horizon) is `TARGET_UTILISATION` of the cluster.
Sizing uses the trace's own arrival times (load 1), so ``load`` changes how busy the *same*
cluster is: ``load=2`` divides every submit time by 2 (arrivals twice as dense). A trace that
would need more than `MAX_SIZED_SERVERS` servers is refused, naming its heaviest job: give
``servers`` to simulate it on a cluster of your size.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlsched.workloads.traces.building import size_cluster
    from dlsched.workloads.traces.loading import load_trace, trace_info
    from dlsched.workloads.traces.philly import load_philly
    from dlsched.workloads.traces.schema import (
        CPU_PER_GPU,
        MAX_DURATION_S,
        MAX_GPUS_PER_JOB,
        MAX_SIZED_SERVERS,
        MAX_SPAN_S,
        MEM_GB_PER_GPU,
        OPTIONAL_COLUMNS,
        PHILLY_FILE,
        PHILLY_JOBS,
        REQUIRED_COLUMNS,
        TARGET_UTILISATION,
        TraceError,
        TraceInfo,
    )

_HOME = {
    "size_cluster": "building",
    "load_trace": "loading",
    "trace_info": "loading",
    "load_philly": "philly",
}
"""Where each name below lives (the rest in ``schema``): imported on first use, so that
importing a light part of the package (`dlsched.workloads.traces.options`, which every
command's options are built from) does not import pandas with the readers."""


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module = importlib.import_module(f"{__name__}.{_HOME.get(name, 'schema')}")
    return getattr(module, name)


__all__ = [
    "CPU_PER_GPU",
    "MAX_DURATION_S",
    "MAX_GPUS_PER_JOB",
    "MAX_SIZED_SERVERS",
    "MAX_SPAN_S",
    "MEM_GB_PER_GPU",
    "OPTIONAL_COLUMNS",
    "PHILLY_FILE",
    "PHILLY_JOBS",
    "REQUIRED_COLUMNS",
    "TARGET_UTILISATION",
    "TraceError",
    "TraceInfo",
    "load_philly",
    "load_trace",
    "size_cluster",
    "trace_info",
]
