"""Bad ``dlsched train`` options: one ``error:`` line, exit 2, before anything is built (issue 15,
item 4, for the three training commands)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_bad_args import assert_refused

# Each of these was a traceback, an allocation of gigabytes or a hang before the bounds.
BAD = [
    (["dl2", "--servers", "99999999999999999999"], "--servers"),
    (["dl2", "--hidden", "-5"], "--hidden"),
    (["dl2", "--hidden", "abc"], "--hidden"),
    (["dl2", "--hidden", "100000000,100000000"], "--hidden"),
    (["dl2", "--hidden", ",".join(["8"] * 20)], "--hidden"),
    (["dl2", "--J", "100000000"], "--J"),
    (["dl2", "--load", "nan"], "--load"),
    (["dl2", "--load", "1e9"], "--load"),
    (["dl2", "--seed", "-1"], "--seed"),
    (["dl2", "--clusters", "100000"], "--clusters"),
    (["dl2", "--rl-steps", "1000000000000"], "--rl-steps"),
    (["deeprm", "--hidden", "0"], "--hidden"),
    (["deeprm", "--seed", "-3"], "--seed"),
    (["deeprm", "--workers", "100000"], "--workers"),
    (["deeprm", "--lr", "inf"], "--lr"),
    (["sched2", "--num-jobs", "1000000000"], "--num-jobs"),
    (["sched2", "--servers", "0"], "--servers"),
    (["sched2", "--seed", "99999999999"], "--seed"),
    (["sched2", "--method", "ppo"], "--method"),
    (["sched2", "--method", "lookahead", "--population", "1"], "--population"),
]


@pytest.mark.parametrize(("args", "option"), BAD)
def test_bad_train_option_is_one_line_naming_it(
    args: list[str], option: str, tmp_path: Path
) -> None:
    assert_refused(["train", *args, "--out", str(tmp_path / "out")], option)
    assert not (tmp_path / "out").exists()
