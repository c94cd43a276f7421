"""``dlsched list``: the registered workloads, schedulers and experiments (built on first use,
`dlsched.cli_lazy`)."""

from __future__ import annotations

from dlsched.commands import common


def list_all() -> None:
    """List workloads, schedulers and experiments."""
    from rich.table import Table

    from dlsched.experiments.registry import experiments as all_experiments
    from dlsched.schedulers.registry import schedulers
    from dlsched.workloads.registry import workloads as all_workloads

    workloads = Table(title="workloads")
    workloads.add_column("name", no_wrap=True)
    workloads.add_column("description")
    for w in all_workloads().values():
        workloads.add_row(w.name + (":PATH" if w.name == "trace" else ""), w.description)
    common.out.print(workloads)
    table = Table(title="schedulers")
    table.add_column("name", no_wrap=True)
    for column in ("setting", "source", "description"):
        table.add_column(column)
    for entry in schedulers().values():
        table.add_row(entry.name, entry.setting, entry.source, entry.description)
    common.out.print(table)
    experiments = Table(title="experiments (dlsched reproduce NAME)")
    experiments.add_column("name", no_wrap=True)
    experiments.add_column("description")
    for e in all_experiments().values():
        experiments.add_row(e.name, e.description)
    common.out.print(experiments)
