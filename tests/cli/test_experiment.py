"""Bringing your own trace on the command line (issue 36): the trace options on every command
that reads a trace, ``--experiment FILE`` (TOML keys = options, the command line wins, unknown
keys one line), named variants, ``--schedulers all``, ``--metric``, ``--summary-out`` and
``--log-scale``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

runner = CliRunner()


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """30 jobs as people write them: other column names, minutes, a status column."""
    lines = ["jobname,submitted,runtime_min,gpus,state"]
    for i in range(30):
        lines.append(f"j{i},{i * 60},{1 + i % 7},{1 + i % 4},{'Killed' if i % 6 == 5 else 'Pass'}")
    path = tmp_path / "mine.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def one_error(args: list[str], *needles: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output[-500:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output[-800:]
    return result.stdout


MAPPING = ["--columns", "duration=runtime_min", "--duration-unit", "min"]


def test_the_same_trace_options_on_simulate_compare_trace_info(trace: Path) -> None:
    one_error(["simulate", "-w", f"trace:{trace}"], "the file has: jobname,", "--columns duration=")
    run = json.loads(ok(["simulate", "-w", f"trace:{trace}", *MAPPING, "--json"]))
    assert run["jobs"] == 30 and run["jct_lower_bound_s"] > 60  # minutes, not seconds
    runs = json.loads(
        ok(["compare", "-w", f"trace:{trace}", *MAPPING, "--drop-status", "killed",
            "--schedulers", "fifo", "--seeds", "1", "--json"])
    )  # fmt: skip
    assert runs[0]["jobs"] == 25
    info = json.loads(ok(["trace", "info", str(trace), *MAPPING, "--json"]))
    assert info["status_counts"] == {"pass": 25, "killed": 5}


def test_train_sched2_takes_the_trace_options(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    printed = ok(["train", "sched2", "-w", f"trace:{trace}", *MAPPING, "--split", "0.6,0.2,0.2",
                  "--method", "lookahead", "--iterations", "1", "--population", "2",
                  "--traces-per-iter", "1", "--num-jobs", "10", "--out", str(out)])  # fmt: skip
    assert "{" not in printed and "avg_jct_s" in printed  # not a raw Python dict
    assert f"use it with: --scheduler sched2:{out}" in printed
    card = json.loads((out / "card.json").read_text())
    assert card["workload_params"]["split"] == "0.6,0.2,0.2"
    assert card["workload_params"]["columns"] == "duration=runtime_min"
    one_error(["train", "sched2", "-w", f"trace:{trace}"], "missing option --out")
    one_error(["train", "sched2", "--columns", "duration=x", "--out", str(tmp_path / "b")],
              "--columns applies to your own trace")  # fmt: skip
    one_error(["train", "sched2", "-w", f"trace:{trace}", *MAPPING, "--split", "0.6,0.2,0.2",
               "--part", "test", "--out", str(tmp_path / "c")], "give --split alone")  # fmt: skip


def test_an_experiment_file_with_variants_and_command_line_overrides(
    trace: Path, tmp_path: Path
) -> None:
    experiment = tmp_path / "exp.toml"
    experiment.write_text(
        f'workload = "trace:{trace}"\n'
        'columns = {duration = "runtime_min"}\n'
        'duration_unit = "min"\n'
        'split = "0.5,0.2,0.3"\n'
        "[compare]\n"
        'part = "test"\n'
        'schedulers = ["fifo", "shortest"]\n'
        'seeds = "1"\n'
        "[variants]\n"
        'shortest = "sif"\n'
    )
    runs = json.loads(ok(["compare", "--experiment", str(experiment), "--json"]))
    assert [r["scheduler"] for r in runs] == ["fifo", "shortest"]
    assert {r["jobs"] for r in runs} == {9}  # the test part: the last 30 %
    runs = json.loads(ok(["compare", "--experiment", str(experiment), "--part", "train", "--json"]))
    assert {r["jobs"] for r in runs} == {15}  # the command line wins
    table = ok(["compare", "--experiment", str(experiment)])
    assert "shortest" in table
    run = json.loads(ok(["simulate", "--experiment", str(experiment), "-s", "shortest", "--json"]))
    assert run["scheduler"] == "shortest" and run["jobs"] == 30
    info = json.loads(ok(["trace", "info", "--experiment", str(experiment), "--part", "test",
                          "--json"]))  # fmt: skip
    assert info["jobs"] == 9 and info["mapped_columns"]["duration"] == "runtime_min"
    one_error(["trace", "info"], "give a trace PATH")


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("bogus = 1\n", ("exp.toml: unknown key 'bogus'",)),
        ("[compare]\nepisodes = 3\n", ("[compare] has unknown key 'episodes'",)),
        ("servers = 0\n", ("exp.toml: servers:", "--servers")),
        ('time_unit = "weeks"\n', ("exp.toml: time_unit:", "'weeks'")),
        ('split = "0.6,\n', ("exp.toml: not valid TOML",)),
        ("[variants]\nmine = 3\n", ("[variants] must map names",)),
    ],
)
def test_a_bad_experiment_file_is_one_line_naming_file_and_key(
    tmp_path: Path, text: str, needles: tuple[str, ...]
) -> None:
    experiment = tmp_path / "exp.toml"
    experiment.write_text(text)
    one_error(["compare", "--experiment", str(experiment)], *needles)


def test_every_applicable_scheduler_a_metric_a_summary_csv_and_a_log_plot(
    trace: Path, tmp_path: Path
) -> None:
    summary, plot = tmp_path / "summary.csv", tmp_path / "cmp.png"
    table = ok(["compare", "-w", f"trace:{trace}", *MAPPING, "--schedulers", "all", "--seeds",
                "1", "--metric", "avg_jct_s,jain_fairness", "--summary-out", str(summary),
                "--plot", str(plot), "--log-scale"])  # fmt: skip
    assert "jain_fairness" in table and "GPU" not in table
    rows = list(csv.DictReader(summary.open()))
    names = [r["scheduler"] for r in rows]
    assert {"fifo", "sif", "tiresias", "sched2"} <= set(names)
    assert "dl2" not in names and "deeprm" not in names  # made for other workloads
    assert float(rows[0]["avg_jct_s_mean"]) > 0 and "jain_fairness_ci95" in rows[0]
    assert plot.stat().st_size > 0
    args = ["compare", "-w", f"trace:{trace}", *MAPPING, "--schedulers", "fifo", "--seeds", "1"]
    one_error([*args, "--metric", "speed"], "--metric: 'speed' is not a summary field")


def test_the_bad_row_hint_is_spelled_as_the_option(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("submit_time,duration,num_gpus\n0,-1,1\n1,-2,1\n2,5,1\n")
    one_error(["simulate", "-w", f"trace:{path}"], "--on-bad-row skip")


def test_dqn_progress_lines_show_validation_only_when_there_is_one() -> None:
    from dlsched.papers.sched2.command import _episode

    row = {"episode": 3, "steps": 9, "epsilon": 0.5, "train_effectiveness": 0.9, "wall_s": 2.0}
    assert "eval" not in _episode({**row, "eval_effectiveness": ""})[1]
    assert "eval E 0.8000" in _episode({**row, "eval_effectiveness": 0.8})[1]


@pytest.mark.parametrize("command", [["simulate"], ["compare"], ["train", "sched2"]])
def test_help_shows_no_value_for_flags_and_names_every_workload(command: list[str]) -> None:
    shown = ok([*command, "--help"])
    assert "--json" in shown or "--resume" in shown
    assert "<bool>" not in shown
    if command != ["train", "sched2"]:
        assert "pollux" in shown  # --workload's help lists every workload


def test_live_summary_shows_a_dash_for_what_a_live_run_cannot_know(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dlsched.commands.live import _print_summary

    _print_summary({"scheduler": "drf", "finished": 2, "jct_lower_bound_s": None}, 2)
    shown = capsys.readouterr().out
    assert "jct_lower_bound_s" in shown and "None" not in shown and "—" in shown


def test_training_windows_come_from_the_train_part_and_validation_from_its_own(
    trace: Path,
) -> None:
    from dlsched.papers.sched2.train import split_traces, workload_options

    options = workload_options(
        f"trace:{trace}", num_jobs=5, load=None, one_gpu_frac=None, servers=None,
        trace_options={"columns": "duration=runtime_min", "split": "0.6,0.2,0.2"},
    )  # fmt: skip
    train, validation = split_traces(f"trace:{trace}", options)
    train_ids = {j.job_id for seed in range(20) for j in train(seed).jobs}
    validation_ids = {j.job_id for seed in range(20) for j in validation(seed).jobs}
    assert train_ids and validation_ids and max(train_ids) < min(validation_ids)
    assert max(validation_ids) < 24  # the test part (jobs 24-29) is never seen


def test_deeprm_tables_show_no_gpu_figures_and_say_time_is_in_steps() -> None:
    one = ok(["simulate", "-w", "deeprm", "-s", "sjf"])
    assert "no GPUs" in one and "time: 1 step = 1 s" in one
    both = ok(["compare", "-w", "deeprm", "--schedulers", "sjf", "--seeds", "1"])
    assert "GPU" not in both and "time: 1 step = 1 s" in both
    assert "GPU" in ok(["compare", "-w", "sched2", "-o", "num_jobs=20", "--schedulers", "sif",
                        "--seeds", "1"])  # fmt: skip
