"""Gavel (Narayanan et al., *Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads*, OSDI 2020): its round-based mechanism (`rounds`), its policies on heterogeneous
clusters (`max_min_fairness`: LAS, `fifo_rounds`, `makespan`, `ftf`; LPs in `lp`, solved with
HiGHS through its wheel ``highspy``; no module named after a built-in scheduler, so that
``-s fifo`` or ``-s las`` does not import this package) and its generated workload
(`workload`). Gavel's code is MIT-licensed; none of it is copied here, only its measured
throughput matrix (``dlsched/data``, see its README).
"""

from dlsched.plugins import ExperimentEntry, Plugin, WorkloadEntry

PLUGIN = Plugin(
    name="gavel",
    scheduler_modules=tuple(
        f"dlsched.papers.gavel.{module}"
        for module in ("max_min_fairness", "fifo_rounds", "makespan", "ftf")
    ),
    workloads=(
        WorkloadEntry(
            "gavel",
            "dlsched.papers.gavel.workload:make_gavel",
            False,
            "Gavel §7: Poisson arrivals of its 26 job types on K80/P100/V100 (-o cluster=...)",
        ),
    ),
    experiments=(
        ExperimentEntry(
            "gavel",
            "dlsched.papers.gavel.experiments:run",
            "Gavel: average JCT vs input job rate, agnostic vs heterogeneity-aware LAS and FIFO",
        ),
    ),
)
