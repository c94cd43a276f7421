"""Bad command-line input: one line on stderr (``error: …``), exit code 2, never a traceback,
never a multi-line box, user text never read as Rich markup (issue 15, items 4 and 5)."""

from __future__ import annotations

import inspect
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dlsched.cli import app
from dlsched.cli_args import OPTION_BOUNDS, parse_option_value, parse_options, parse_seed_list

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
SCHED2_POLICY = str(ROOT / "src" / "dlsched" / "policies" / "sched2")
CHEAP = ["-w", "deeprm", "-o", "num_jobs=5"]  # a workload that runs in milliseconds


def invoke(args: list[str]) -> Result:
    return runner.invoke(app, args)


def assert_one_line_or_success(args: list[str], result: Result) -> None:
    """Exit 0, or exit 2 with exactly one ``error:`` line on stderr; never an exception."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{args}: raised {result.exception!r}")
    if result.exit_code == 0:
        return
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, (args, result.exit_code, result.stderr)
    assert len(lines) == 1, (args, result.stderr)
    assert lines[0].startswith("error: "), (args, result.stderr)
    assert "Traceback" not in result.stderr and "╭" not in result.stderr


def assert_refused(args: list[str], *needles: str) -> str:
    """Exit 2 with one ``error:`` line containing every needle; returns the line."""
    result = invoke(args)
    assert_one_line_or_success(args, result)
    assert result.exit_code == 2, (args, result.stdout[-300:])
    line = result.stderr.strip()
    for needle in needles:
        assert needle in line, (args, line)
    return line


# The audit's examples (issue 15 item 4): every one of them failed on the old code — a
# traceback, a multi-line Typer box, a hang or a silent success.
AUDIT = [
    (["simulate", *CHEAP, "-o", "num_jobs=abc"], ("num_jobs=abc",)),  # TypeError traceback
    (["simulate", *CHEAP, "-o", "num_jobs=2.5"], ("num_jobs=2.5",)),  # silently ran
    (["simulate", *CHEAP, "-o", "num_jobs=nan"], ("num_jobs=nan",)),
    (["simulate", "-w", "deeprm", "-o", "num_jobs=1000000000"], ("num_jobs",)),  # hang
    (["simulate", "-w", "dl2", "-o", "noise=-1"], ("--noise",)),  # TypeError traceback
    (["simulate", *CHEAP, "--servers", "99999999999999999999"], ("--servers",)),  # Overflow
    (["simulate", "-w", "dl2", "-s", f"dl2:{SCHED2_POLICY}"], ("sched2", "dl2")),  # TypeError
    (["compare", *CHEAP, "--seeds", "0-1000000000"], ("--seeds", "10,000")),  # MemoryError
    (["compare", *CHEAP, "--seeds", "0-99999999999999999999"], ("--seeds",)),  # Overflow
    (["simulate", *CHEAP, "--seed", "abc"], ("--seed",)),  # multi-line box
    (["simulate", *CHEAP, "--servers", "0"], ("--servers",)),
    (["simulate", *CHEAP, "--load", "-1"], ("--load",)),
    (["simulate", *CHEAP, "--load", "nan"], ("--load",)),
    (["simulate", *CHEAP, "-s", "fifo:arg"], ("fifo",)),  # silently ignored
    (["simulate", *CHEAP, "-s", "deeprm:-5"], ("deeprm:-5",)),
    (["simulate", *CHEAP, "-s", "tiresias:nan"], ("tiresias:nan",)),
    (["simulate", "-w", "dl2", "-o", "num_jobs=5", "--noise", "inf"], ("--noise",)),  # ran
    (["simulate", "--seed", "4294967296", *CHEAP], ("--seed",)),
]


@pytest.mark.parametrize(("args", "needles"), AUDIT, ids=[" ".join(a) for a, _ in AUDIT])
def test_audit_example_gives_one_line_and_exit_2(args: list[str], needles: tuple[str, ...]):
    start = time.monotonic()
    assert_refused(args, *needles)
    assert time.monotonic() - start < 30  # refused at the boundary, not after a long run


def test_user_text_is_not_read_as_markup_or_emoji():
    line = assert_refused(["simulate", "--workload", "trace:data/x[/].csv"], "data/x[/].csv")
    assert "MarkupError" not in line
    assert_refused(["simulate", "-w", "trace:data/[red]x.csv"], "data/[red]x.csv")
    assert_refused(["simulate", *CHEAP, "-s", "deeprm:abc"], "deeprm:abc")  # not an emoji
    assert_refused(["simulate", *CHEAP, "-s", "nosuch:[bold]x"], "'nosuch'")


def test_a_valid_workload_name_with_brackets_reaches_the_table(tmp_path: Path):
    (tmp_path / "d[").mkdir()
    trace = tmp_path / "d[" / "]x[red]y.csv"  # the path holds "[/]" and "[red]"
    trace.write_text("submit_time,duration,num_gpus\n0,100,1\n10,50,2\n")
    result = invoke(["simulate", "-w", f"trace:{trace}", "-s", "fifo"])
    assert result.exit_code == 0, result.stderr
    assert "d[/]x[red]y.csv" in result.stdout.replace("\n", "")


def test_valid_bounds_still_run():
    for args in (
        ["simulate", *CHEAP, "-s", "tiresias:100,1000", "--json"],
        ["simulate", *CHEAP, "-s", "deeprm:0.7", "--seed", "4294967295", "--json"],
        ["simulate", *CHEAP, "-s", "random:7", "--load", "100", "--json"],
        ["simulate", "-w", "dl2", "-o", "num_jobs=5", "--noise", "0", "--json"],
        ["compare", *CHEAP, "--schedulers", "sjf", "--seeds", "0,4294967295", "--json"],
        ["compare", *CHEAP, "--schedulers", "sjf", "--seeds", "1", "-o", "horizon_s=5"],
    ):
        result = invoke(args)
        assert result.exit_code == 0, (args, result.stderr)


def test_help_states_the_limits():
    def help_text(command: str) -> str:  # the help's words, without its box borders
        return " ".join(invoke([command, "--help"]).stdout.replace("│", " ").split())

    text = help_text("simulate")
    assert "(0, 100]" in text and "[0, 1]" in text and "1,000,000" in text
    assert "4294967295" in text and "100000" in text
    assert "10,000" in help_text("compare")


# -- the fuzz corpus -------------------------------------------------------------------------

BAD_VALUES = [
    "abc", "-1", "0", "nan", "inf", "-inf", "1e9", "99999999999999999999", "2.5", "", "1e400",
    "[red]x[/]", "[/]", ":smile:", "0x10", " 3", "-5", "1-", "0-1000000000", "x=y", "１",
]  # fmt: skip
SCHEDULERS = ["fifo", "drf", "sjf", "random", "tetris", "tetris-star", "tiresias", "deeprm"]
OPTION_KEYS = ["num_jobs", "max_jobs", "one_gpu_frac", "mix", "noise", "seed", "bogus", "x y"]


def _mutation(rng: random.Random) -> list[str]:
    value = rng.choice(BAD_VALUES)
    kind = rng.randrange(9)
    if kind == 0:
        return ["--seed", value]
    if kind == 1:
        return ["--servers", value]
    if kind == 2:
        return ["--load", value]
    if kind == 3:
        return ["--noise", value]
    if kind == 4:
        return ["--horizon", value]
    if kind == 5:
        return ["-o", f"{rng.choice(OPTION_KEYS)}={value}"]
    if kind == 6:
        return ["-s", f"{rng.choice(SCHEDULERS)}:{value}"]
    if kind == 7:
        return ["-w", rng.choice(["", "trace:", "dl2:", "nosuch", "philly:"]) + value]
    return [rng.choice(["--bogus", "--seed", "--placement", "--on-bad-row"]), value]


def fuzz_corpus(n: int, seed: int) -> list[list[str]]:
    """``n`` seeded argument sets: a cheap valid command with one to three bad mutations."""
    rng = random.Random(seed)
    corpus = []
    for _ in range(n):
        args = ["simulate", *CHEAP, "-s", "sjf"]
        for _ in range(rng.randint(1, 3)):
            args += _mutation(rng)
        if rng.random() < 0.25:  # compare has --seeds and --schedulers instead of -s
            args = ["compare", *(a for a in args[1:] if not a.startswith("-s"))]
            args = [a for a in args if a != "sjf"]
            args += ["--seeds", rng.choice(["1", *BAD_VALUES])]
            args += ["--schedulers", rng.choice(["sjf", "sjf,sjf", "", "fifo:x", "nosuch"])]
        corpus.append(args)
    return corpus


FUZZ_SIZE = 240


@pytest.mark.slow
def test_fuzz_corpus_gives_one_line_or_success():
    outcomes = {"success": 0, "one-line": 0}
    for args in fuzz_corpus(FUZZ_SIZE, seed=15):
        result = invoke(args)
        assert_one_line_or_success(args, result)
        outcomes["success" if result.exit_code == 0 else "one-line"] += 1
    assert sum(outcomes.values()) == FUZZ_SIZE >= 200
    assert outcomes["one-line"] > FUZZ_SIZE // 2  # the corpus is mostly bad input


@pytest.mark.slow
def test_a_few_through_a_real_process():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for args in (
        ["simulate", *CHEAP, "--seed", "abc"],
        ["simulate", "--workload", "trace:data/x[/].csv"],
        ["compare", *CHEAP, "--seeds", "0-99999999999999999999"],
        ["simulate", *CHEAP, "-o", "num_jobs=abc"],
        ["train", "dl2", "--out", "x", "--sl-steps", "abc"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "dlsched.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=ROOT,
        )
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, proc.stderr)


def test_no_args_still_prints_help():
    result = invoke([])
    assert "Usage" in result.stdout and "error" not in result.stderr


# -- the parsers and tables ------------------------------------------------------------------


def test_seed_list_matches_the_old_parser_and_is_bounded():
    assert parse_seed_list("1-3,8") == [1, 2, 3, 8]
    assert parse_seed_list(" 7 ") == [7]
    for bad in ("", "1-", "3-1", "-5", "1,1", "0-10000", "a"):
        with pytest.raises(ValueError, match="--seeds"):
            parse_seed_list(bad)
    assert len(parse_seed_list("0-9999")) == 10_000


def test_options_are_typed_per_key():
    assert parse_options(["num_jobs=50", "mix=large-jobs", "one-gpu-frac=0.5"]) == {
        "num_jobs": 50,
        "mix": "large-jobs",
        "one_gpu_frac": 0.5,
    }
    assert parse_options(["num_jobs=1e3"]) == {"num_jobs": 1000}
    for bad in ("num_jobs=0", "one_gpu_frac=1.5", "interval_s=inf", "x=nan", "=3", "k"):
        with pytest.raises(ValueError, match="--option"):
            parse_options([bad])
    with pytest.raises(ValueError, match="twice"):
        parse_options(["num_jobs=5", "num-jobs=6"])
    assert parse_option_value("on_events", "false") is False


def test_every_workload_option_has_a_bound():
    from dlsched.workloads.registry import WORKLOADS

    for entry in WORKLOADS.values():
        params = inspect.signature(entry.function()).parameters
        for name, param in params.items():
            if param.kind is inspect.Parameter.KEYWORD_ONLY and name not in (
                "servers",
                "load",
                "seed",
                "noise",
                "on_bad_row",
                "progress",  # a Python callback, refused by -o
            ):
                assert name in OPTION_BOUNDS, f"workload {entry.name}: -o {name} has no bound"


def test_every_scheduler_that_reads_its_argument_declares_it():
    from dlsched.schedulers.arguments import ARGUMENTS
    from dlsched.schedulers.registry import schedulers

    entries = schedulers()
    assert set(ARGUMENTS) <= set(entries)
    for name, entry in entries.items():
        (param,) = inspect.signature(entry.factory).parameters
        reads_it = not param.startswith("_")
        declared = name in ARGUMENTS or entry.argument is not None
        assert reads_it == declared, name
