"""Sub-commands of ``dlsched`` built on first use (issue 34, point 1: start-up).

Typer builds every registered command (imports its module, reads its signature, makes its
options) whenever the CLI runs; `lazy_group` makes a command group that knows some commands only
by ``"module:function"`` and builds one when it is looked up: ``dlsched simulate`` does not import
or build ``compare``, ``report``, ``train *``, ``live run`` or ``k8s *``. Help and completion
list every name and build them all then, so they print what they did before; "did you mean"
matches a mistyped name against the names alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

import typer
import typer.main
from typer.core import TyperGroup

from dlsched.plugins import resolve

Command = Any
"""A Click command (Typer vendors Click and exports no name for its class)."""


class LazyCommands(MutableMapping[str, Command]):
    """A group's commands by name, in help order: those already built, and those known by
    ``"module:function"`` until first looked up (then built by ``build(name, target)``).

    ``slots`` gives the order: a name with a target is lazy, a name with None is the place of
    an eagerly built command; built commands not named come after, in their own order."""

    def __init__(
        self,
        built: Mapping[str, Command],
        slots: Mapping[str, str | None],
        build: Callable[[str, str], Command],
    ) -> None:
        self._built = dict(built)
        self._targets = {n: t for n, t in slots.items() if t is not None and n not in built}
        named = [n for n in slots if n in self._built or n in self._targets]
        self._order = named + [n for n in self._built if n not in named]
        self._build = build

    @property
    def built(self) -> frozenset[str]:
        """The names of the commands built so far."""
        return frozenset(self._built)

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            target = self._targets.pop(name)  # KeyError: no such command
            self._built[name] = self._build(name, target)
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command
        self._targets.pop(name, None)
        if name not in self._order:
            self._order.append(name)

    def __delitem__(self, name: str) -> None:
        if self._built.pop(name, None) is None and self._targets.pop(name, None) is None:
            raise KeyError(name)
        self._order.remove(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)


def lazy_group(
    slots: Mapping[str, str | None], base: type[TyperGroup] = TyperGroup
) -> type[TyperGroup]:
    """A Typer group class (``typer.Typer(cls=…)``) whose commands in ``slots`` with a
    ``"module:function"`` target are built on first use, as ``typer_app.command(name)`` would
    have built them; see `LazyCommands` for ``slots``."""

    class LazyGroup(base):  # type: ignore[valid-type, misc]  # a class made per group
        commands: MutableMapping[str, Command]

        def __init__(self, **attrs: Any) -> None:
            super().__init__(**attrs)
            self.commands = LazyCommands(self.commands, slots, self._build)

        def _build(self, name: str, target: str) -> Command:
            holder = typer.Typer()
            holder.command(name)(resolve(target))
            return typer.main.get_command_from_info(
                holder.registered_commands[0],
                pretty_exceptions_short=holder.pretty_exceptions_short,
                rich_markup_mode=self.rich_markup_mode,
            )

        def list_commands(self, ctx: Any) -> list[str]:
            """Every name, in help order, none built (Typer's own builds each)."""
            return list(self.commands)

    return LazyGroup
