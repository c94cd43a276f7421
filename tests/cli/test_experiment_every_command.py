"""``--experiment FILE`` on every command of issue 36 beside those of `test_experiment`:
``reproduce``, ``train dl2`` and ``train deeprm`` (same keys, the same one-line errors;
``[train.NAME]`` for one train command's own options; the split declared is what training and
validation use)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.experiments import registry
from dlsched.papers.deeprm import train as deeprm_train
from dlsched.papers.dl2 import train as dl2_train

runner = CliRunner()


class Ran(Exception):
    """Raised by a stand-in trainer once it has seen its arguments."""


def one_error(args: list[str], *needles: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output[-500:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def elastic_trace(tmp_path: Path) -> Path:
    """40 replica-elastic jobs (1..2x their GPUs), minutes, other column names."""
    lines = ["jobname,submitted,runtime_min,gpus,min_replicas,max_replicas"]
    lines += [f"j{i},{i * 60},{1 + i % 7},{1 + i % 4},1,{2 * (1 + i % 4)}" for i in range(40)]
    path = tmp_path / "el.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def test_reproduce_takes_its_name_and_options_from_the_file_and_says_what_does_not_apply(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[tuple[str, Path, bool]] = []

    def fake_run(name: str, out_dir: Path, *, full: bool = False) -> list[Path]:
        seen.append((name, out_dir, full))
        return []

    monkeypatch.setattr(registry, "run_experiment", fake_run)
    exp = write(tmp_path, 'workload = "trace:x.csv"\n[reproduce]\nname = "deeprm"\nout = "o"\n')
    result = runner.invoke(app, ["reproduce", "--experiment", str(exp)])
    assert result.exit_code == 0, result.output
    assert seen == [("deeprm", Path("o"), False)]
    assert "workload does not apply here (a paper's experiment" in caplog.text
    result = runner.invoke(app, ["reproduce", "sched2", "--experiment", str(exp), "--full"])
    assert seen[-1] == ("sched2", Path("o"), True)  # the command line wins
    one_error(["reproduce", "--experiment", str(write(tmp_path, "[reproduce]\nbogus = 1\n"))],
              "exp.toml: [reproduce] has unknown key 'bogus'")  # fmt: skip
    one_error(["reproduce", "--experiment", str(write(tmp_path, "[reproduce]\nfull = true\n"))],
              "missing argument NAME", "name = … under [reproduce]")  # fmt: skip


def test_train_dl2_reads_the_file_and_trains_on_the_train_part_validates_on_the_validation_part(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, elastic_trace: Path
) -> None:
    seen: list[Any] = []

    def fake_train(spec: Any, run: Any, progress: Any = None) -> Path:
        seen.append((spec, run))
        raise Ran

    monkeypatch.setattr(dl2_train, "train_dl2", fake_train)
    exp = write(
        tmp_path,
        f'workload = "trace:{elastic_trace}"\ncolumns = {{duration = "runtime_min"}}\n'
        'duration_unit = "min"\nsplit = "0.6,0.2,0.2"\n'
        f'[train]\nout = "{tmp_path / "run"}"\n'
        '[train.dl2]\nsl_steps = 4\nval_seeds = "7"\n'
        '[train.sched2]\nmethod = "lookahead"\n',  # another train command's: not read here
    )
    result = runner.invoke(app, ["train", "dl2", "--experiment", str(exp), "--rl-steps", "3"])
    assert isinstance(result.exception, Ran), result.output
    spec, run = seen[0]
    assert run.out == tmp_path / "run" and spec.sl_steps == 4 and spec.rl_steps == 3
    assert spec.val_seeds == (7,) and spec.workload == f"trace:{elastic_trace}"
    assert spec.workload_options["part"] == "train"
    assert spec.validation_options["part"] == "validation"
    assert spec.validation_options["split"] == "0.6,0.2,0.2"
    assert dl2_train._validation_options(spec) is spec.validation_options
    assert "validated on the validation part of split 0.6,0.2,0.2" in dl2_train._notes(spec, [])
    one_error(["train", "dl2", "--experiment", str(exp), "--part", "test"], "give --split alone")
    one_error(["train", "dl2", "--columns", "duration=x", "--out", str(tmp_path / "b")],
              "--columns applies to your own trace")  # fmt: skip
    bad = write(tmp_path, "[train.dl2]\nepisodes = 3\n[train.dl9]\nx = 1\n")
    one_error(["train", "dl2", "--experiment", str(bad)], "[train.dl9]: no train command 'dl9'")
    bad = write(tmp_path, "[train.dl2]\nepisodes = 3\n")
    one_error(["train", "dl2", "--experiment", str(bad)],
              "exp.toml: [train.dl2] has unknown key 'episodes'")  # fmt: skip


def test_train_deeprm_reads_the_file_and_refuses_a_workload_it_cannot_train_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[Any] = []

    def fake_train(config: Any, run: Any, **kwargs: Any) -> SimpleNamespace:
        seen.append((config, run))
        return SimpleNamespace(
            best_dir=run.out, best_slowdown=1.0, best_mode="greedy", best_iteration=1,
            sjf_slowdown=1.0, wall_s=0.0, iterations=1,
        )  # fmt: skip

    monkeypatch.setattr(deeprm_train, "train_deeprm", fake_train)
    exp = write(
        tmp_path,
        f'workload = "deeprm"\nload = 0.5\n[train]\nout = "{tmp_path / "r"}"\n'
        "[train.deeprm]\niterations = 2\n",
    )
    result = runner.invoke(app, ["train", "deeprm", "--experiment", str(exp)])
    assert result.exit_code == 0, result.output
    config, run = seen[0]
    assert (config.load, config.iterations, run.out) == (0.5, 2, tmp_path / "r")
    trace = write(tmp_path, 'workload = "trace:x.csv"\nsplit = "0.6,0.2,0.2"\n[train]\nout = "r"\n')
    one_error(
        ["train", "deeprm", "--experiment", str(trace)],
        "exp.toml: workload, split do not apply here (train deeprm trains on DeepRM's own",
    )


def test_scheduling_rounds_from_the_command_line(tmp_path: Path) -> None:
    """Blox's 300 s rounds, not only in the Python API: ``-o interval_s=300 -o on_events=false``
    (or ``option = [...]`` under ``[simulate]``) decides only on the round's tick."""
    exp = write(tmp_path, '[simulate]\noption = ["interval_s=300", "on_events=false"]\n')
    base = ["simulate", "-w", "dl2", "-s", "fifo", "--json"]
    rounds = json.loads(runner.invoke(app, [*base, "--experiment", str(exp)]).stdout)
    default = json.loads(runner.invoke(app, base).stdout)  # the dl2 workload's own rounds
    assert abs(rounds["decisions"] - rounds["makespan_s"] / 300) <= 2  # one per 300 s tick
    assert rounds["decisions"] != default["decisions"]


def test_dash_o_on_train_sched2_says_where_a_traces_settings_go() -> None:
    """Issue 36: ``train sched2 -o columns=…`` was a bare "No such option: -o"."""
    one_error(
        ["train", "sched2", "-o", "columns=duration=x", "--out", "r"],
        "No such option: -o (here a trace's settings are options of their own: --columns",
    )
