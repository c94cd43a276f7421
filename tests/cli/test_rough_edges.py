"""Issue 19's rough edges, one test each: units, width off a terminal, labelled figures, the
README's shipped policies, documented training logs and progress lines off a terminal."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import matplotlib.figure
import pytest
from typer.testing import CliRunner

from dlsched.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m dlsched ARGS`` with stdout a pipe (not a terminal), as in CI or ``| less``."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    full_env["PYTHONPATH"] = str(SRC)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "dlsched", *args],
        capture_output=True,
        text=True,
        env=full_env,
        check=False,
        timeout=120,
    )


# -- one unit per column ------------------------------------------------------------------------


def test_simulate_table_shows_the_json_seconds_with_their_unit():
    args = ["simulate", "-w", "dl2", "-s", "drf", "--seed", "1"]
    summary = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert summary["avg_jct_s"] > 3600  # large enough that the old table switched to hours
    table = runner.invoke(app, args, env={"COLUMNS": "120"}).stdout
    row = next(line for line in table.splitlines() if "avg_jct_s" in line)
    assert f"{summary['avg_jct_s']:,.1f}" in row and re.search(r"\bs\b", row)
    assert not re.search(r"\d h\b", table)


def test_compare_time_columns_are_seconds_whatever_the_values():
    for workload, schedulers in (("dl2", "fifo,drf"), ("deeprm", "sjf,fifo")):
        result = runner.invoke(
            app, ["compare", "-w", workload, "--schedulers", schedulers, "--seeds", "1-2"]
        )
        assert result.exit_code == 0, result.output
        assert "(h)" not in result.stdout
        # avg JCT, p95 JCT, makespan, avg wait; avg queued in the second table
        assert result.stdout.count("(s)") == 5


# -- full width off a terminal ----------------------------------------------------------------


@pytest.mark.slow
def test_list_off_a_terminal_keeps_every_name_whole():
    from dlsched.schedulers.registry import schedulers

    result = _cli("list")
    assert result.returncode == 0, result.stderr
    cells = {cell.strip() for line in result.stdout.splitlines() for cell in line.split("│")}
    for name in schedulers():
        assert name in cells, name  # whole, in one cell of one line
    assert max(len(line) for line in result.stdout.splitlines()) > 80


@pytest.mark.slow
def test_help_off_a_terminal_is_not_wrapped_at_80_columns():
    result = _cli("compare", "--help")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if "--seeds" in line)
    assert "at most 10,000" in line  # the whole help text on the option's line
    narrow = _cli("compare", "--help", env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80


# -- labelled figures ---------------------------------------------------------------------------


def _closed_figures(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[matplotlib.figure.Figure]:
    figures: list[matplotlib.figure.Figure] = []
    monkeypatch.setattr(module.plt, "close", figures.append)
    return figures


def test_deeprm_fig5_has_y_labels_and_intervals(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from dlsched.papers.deeprm import experiments

    figures = _closed_figures(monkeypatch, experiments)
    rows = [
        {
            "scheduler": name,
            "avg_slowdown": 2.0 + k,
            "slowdown_ci95": 0.3,
            "avg_completion_steps": 10.0 + k,
            "completion_ci95": 1.5,
        }
        for k, name in enumerate(("deeprm", "sjf"))
    ]
    experiments.plot_fig5(rows, tmp_path / "fig5.png", 10)
    (fig,) = figures
    for ax in fig.axes:
        assert ax.get_ylabel()
        from matplotlib.container import BarContainer

        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        assert bars and all(b.errorbar is not None for b in bars)  # a 95 % interval each


def test_deeprm_fig6_labels_every_y_axis_and_gives_mean_and_max_reward_their_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    from dlsched.papers.deeprm import experiments

    figures = _closed_figures(monkeypatch, experiments)
    paths = experiments.fig6(tmp_path, {"sjf": 2.7})
    if not paths:
        pytest.skip("no shipped DeepRM learning curve")
    (fig,) = figures
    assert [bool(ax.get_ylabel()) for ax in fig.axes] == [True, True, True]
    assert all(ax.get_xlabel() for ax in fig.axes)
    _, mean, best = fig.axes  # issue 36: mean and max reward are not on one axis
    assert len(mean.lines) == len(best.lines) == 1
    assert "mean" in mean.get_ylabel() and "max" in best.get_ylabel()
    lines = experiments.fig6_lines(tmp_path)
    assert any(line.startswith("Mean total reward") for line in lines)
    assert any(line.startswith("Max total reward") for line in lines)


def test_simulate_plot_labels_every_y_axis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    import dlsched
    from dlsched.experiments import plots

    figures = _closed_figures(monkeypatch, plots)
    plots.plot_run(dlsched.simulate("deeprm", "sjf", 1), tmp_path / "run.png")
    (fig,) = figures
    assert all(ax.get_ylabel() for ax in fig.axes)


# -- the README says what the shipped policies are ---------------------------------------------


def test_readme_and_list_say_how_the_shipped_dl2_policy_was_made():
    from dlsched.rl.checkpoint import read_card
    from dlsched.schedulers.registry import schedulers

    card = read_card(SRC / "dlsched" / "papers" / "dl2" / "policies" / "dl2")
    notes = card.notes.lower()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    bullet = readme[readme.index("**Learned schedulers") :].split("\n- ")[0]
    assert "card.json" in bullet
    described = schedulers()["dl2"].description.lower()
    for method in ("evolution strategies", "actor-critic"):
        used = method in notes
        assert (f"then {method}" in bullet.lower()) == used, method
        assert method not in described or used, method


# -- training logs: documented columns, progress lines off a terminal -------------------------


def _readme_columns(log_name: str, command: str) -> set[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index(f"- `{command}` → `OUT/{log_name}`")
    item = readme[start:].split("\n- ")[0].split("\n\n")[0]
    return set(re.findall(r"`([a-z_0-9]+)`", item))


@pytest.mark.slow
def test_train_dl2_log_columns_are_documented(tmp_path: Path):
    out = tmp_path / "run"
    args = ["train", "dl2", "--out", str(out), "--servers", "3", "--load", "0.25"]
    args += ["-o", "num_jobs=6", "--J", "8", "--hidden", "8", "--sl-episodes", "1"]
    args += ["--sl-steps", "2", "--rl-steps", "0", "--eval-every", "2", "--val-seeds", "201"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    with (out / "train_log.csv").open() as fh:
        header = next(csv.reader(fh))
    assert set(header) <= _readme_columns("train_log.csv", "train dl2")


def test_train_deeprm_and_sched2_log_columns_are_documented():
    from dlsched.papers.deeprm.train import CSV_FIELDS
    from dlsched.papers.sched2.algorithm import EpisodeLog

    assert set(CSV_FIELDS) <= _readme_columns("train_log.csv", "train deeprm")
    assert set(EpisodeLog.__dataclass_fields__) <= _readme_columns("train_log.csv", "train sched2")


def test_progress_off_a_terminal_prints_a_line_every_few_seconds(
    capsys: pytest.CaptureFixture[str],
):
    from dlsched.commands.common import progress_bar

    with progress_bar(every_s=0.05) as progress:
        task = progress.add_task("training", total=10)
        progress.update(task, advance=3)
        time.sleep(0.3)  # the caller is busy: lines still come
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("training")]
    assert len(lines) >= 2 and "3/10" in lines[-1]
