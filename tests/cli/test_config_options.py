"""``dlsched train`` commands generated from documented config dataclasses (issue 28, point 2):
help text lives once (the fields' docstrings), every field with a type an option can carry is
an option, the commands stay short, and old spellings keep parsing."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import typer
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.commands.config_options import Section, train_command
from dlsched.option_fields import Opt, field_docs
from dlsched.rl.run_options import RunOptions

COMMANDS = {
    "dl2": "src/dlsched/papers/dl2/command.py",
    "deeprm": "src/dlsched/papers/deeprm/command.py",
    "sched2": "src/dlsched/papers/sched2/command.py",
}
ROOT = Path(__file__).resolve().parents[2]
MAX_COMMAND_LINES = 40


def _train_commands() -> dict[str, Any]:
    group: Any = typer.main.get_command(app)
    return dict(group.commands["train"].commands)


def test_every_option_has_help_from_a_docstring() -> None:
    for name, command in _train_commands().items():
        for param in command.params:
            if param.name == "help" or getattr(param, "hidden", False):
                continue
            assert param.help, f"train {name} {param.opts}: no help"
            assert "``" not in param.help, f"train {name} {param.opts}: reST left in help"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_train_command_is_short(name: str) -> None:
    tree = ast.parse((ROOT / COMMANDS[name]).read_text())
    (command,) = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("train_")
    ]
    length = (command.end_lineno or 0) - command.lineno + 1
    assert length <= MAX_COMMAND_LINES, f"train {name}: {length} lines"


@dataclasses.dataclass
class Toy:
    count: Annotated[int, Opt(min=1, max=5)] = 2
    """How many."""
    mode: Literal["a", "b"] = "a"
    """Which mode."""
    sizes: Annotated[tuple[float, ...], Opt(min=0.0, max=1.0)] = (0.5,)
    """Sizes, comma-separated."""
    on: Annotated[bool, Opt(flags=("--on/--off",))] = True
    """Switch."""
    nested: dict[str, int] = dataclasses.field(default_factory=dict)
    """Not an option (a mapping)."""


def _toy_app(seen: list[Any]) -> typer.Typer:
    toy_app = typer.Typer()

    @toy_app.command()
    @train_command(Section(Toy))
    def toy(run: RunOptions, toy: Toy) -> None:
        """A toy command."""
        seen.append((run, toy))

    @toy_app.command()
    def other() -> None:
        """Keeps the group a group."""

    return toy_app


def test_generated_options_parse_check_and_build_the_dataclasses(tmp_path: Path) -> None:
    seen: list[Any] = []
    toy_app = _toy_app(seen)
    args = ["toy", "--out", str(tmp_path), "--count", "3", "--mode", "b", "--sizes", "0.1,0.2"]
    result = CliRunner().invoke(toy_app, [*args, "--off", "--max-minutes", "2"])
    assert result.exit_code == 0, result.output
    run, toy = seen[0]
    assert run == RunOptions(tmp_path, max_minutes=2.0)
    assert toy == Toy(count=3, mode="b", sizes=(0.1, 0.2), on=False)
    for bad in (["--count", "9"], ["--mode", "c"], ["--sizes", "0.1,7"], ["--sizes", "x"]):
        result = CliRunner().invoke(toy_app, ["toy", "--out", str(tmp_path), *bad])
        assert result.exit_code == 2, (bad, result.output)
    assert "--nested" not in CliRunner().invoke(toy_app, ["toy", "--help"]).output


def test_field_docs_reads_the_docstrings_under_fields() -> None:
    assert field_docs(Toy)["count"] == "How many."
    assert field_docs(RunOptions)["force"].startswith("Replace another run's")


class _Outer:
    @dataclasses.dataclass
    class Inner:
        size: int = 1
        """Inner size."""


def test_field_docs_parses_a_module_once_and_finds_nested_classes() -> None:
    from dlsched import option_fields

    assert field_docs(_Outer.Inner) == {"size": "Inner size."}
    option_fields._module_tree.cache_clear()
    field_docs(Toy)
    field_docs(_Outer.Inner)
    assert option_fields._module_tree.cache_info().misses == 1  # this file, parsed once
    assert field_docs(dataclasses.make_dataclass("Made", [("x", int)])) == {}  # no source: no docs


@pytest.mark.parametrize(
    ("command", "old"),
    [("deeprm", "--unmasked"), ("dl2", "--no-value-net"), ("dl2", "--es-stall-probes")],
)
def test_old_spellings_are_still_options(command: str, old: str) -> None:
    opts = {o for p in _train_commands()[command].params for o in (*p.opts, *p.secondary_opts)}
    assert old in opts


def test_help_text_is_not_read_as_rich_markup() -> None:
    """``Needs dlsched[dask]`` in a docstring must not lose ``[dask]`` as a Rich tag."""
    result = CliRunner().invoke(app, ["compare", "--help"], env={"COLUMNS": "300"})
    assert "dlsched[dask]" in result.output
