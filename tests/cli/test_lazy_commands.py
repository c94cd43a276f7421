"""Sub-commands built on first use (`dlsched.cli_lazy`, issue 34 point 1): a run builds only the
command it invokes; help and look-ups see every command, in the order they had."""

from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cli_lazy import LazyCommands
from dlsched.plugins import plugins


def test_commands_keep_their_order_and_are_built_once_on_first_look_up() -> None:
    built: list[str] = []

    def build(name: str, target: str) -> Any:
        built.append(name)
        return f"{name} from {target}"

    commands = LazyCommands(
        {"simulate": "S", "list": "L"}, {"simulate": None, "compare": "m:compare"}, build
    )
    assert list(commands) == ["simulate", "compare", "list"] and built == []
    assert commands["compare"] == "compare from m:compare"
    assert commands.get("compare") == "compare from m:compare" and built == ["compare"]
    assert commands.get("nosuch") is None and "nosuch" not in commands
    commands["extra"] = "E"
    del commands["list"]
    assert list(commands) == ["simulate", "compare", "extra"] and len(commands) == 3
    with pytest.raises(KeyError):
        del commands["list"]


def test_building_the_cli_builds_no_lazy_command_and_a_look_up_builds_one() -> None:
    group: Any = typer.main.get_command(app)
    train = group.commands["train"]
    names = [c.name for p in plugins() for c in p.train_commands]
    assert group.list_commands(None)[:5] == ["simulate", "compare", "report", "list", "reproduce"]
    assert group.commands.built == {"simulate", "trace", "train", "live", "k8s"}  # the groups
    assert group.commands["trace"].commands.built == frozenset()  # trace info: lazy too
    assert train.list_commands(None) == names
    assert train.commands.built == frozenset()  # nothing built yet
    command = group.get_command(None, "compare")
    assert command.name == "compare" and any(p.name == "seeds" for p in command.params)
    assert group.commands.built >= {"simulate", "compare"}
    assert "report" not in group.commands.built


def test_help_of_a_lazy_group_lists_every_command() -> None:
    result = CliRunner().invoke(app, ["train", "--help"])
    assert result.exit_code == 0, result.output
    for name in (c.name for p in plugins() for c in p.train_commands):
        assert name in result.output
