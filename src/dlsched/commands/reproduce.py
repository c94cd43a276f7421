"""``dlsched reproduce NAME``: a paper's table or figure (built on first use,
`dlsched.cli_lazy`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.commands import common
from dlsched.commands.common import one_line_errors as _one_line_errors
from dlsched.commands.experiment import experiment_file
from dlsched.commands.paths import check_out_folder


@experiment_file(
    "reproduce", unused="warn", why="a paper's experiment runs in the paper's own setting"
)
def reproduce(
    name: Annotated[str, typer.Argument(help="Experiment name (see dlsched list).")],
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output folder, used as given; its parent must exist [default: out/NAME].",
        ),
    ] = None,
    full: Annotated[bool, typer.Option(help="Run the paper's full size (slow).")] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Write an interactive HTML report of the runs the experiment simulates (in "
            "this process, and its comparisons' runs in worker processes), labelled scheduler "
            "· workload when it ran several; training rollouts are not drawn. One "
            "self-contained .html file that opens offline.",
        ),
    ] = None,
) -> None:
    """Regenerate a paper's table or figure as CSV + PNG + Markdown."""
    from dlsched.commands.report import reproduce_report
    from dlsched.experiments.registry import experiments, run_experiment

    with _one_line_errors():
        if out_dir is not None and name in experiments():
            check_out_folder(out_dir, "--out")
        with reproduce_report(report, f"reproduce {name}") as paths:
            paths += run_experiment(name, out_dir or Path("out") / name, full=full)
    for path in paths:
        common.out.print(f"wrote {path}", markup=False, emoji=False, highlight=False)
