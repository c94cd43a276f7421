"""How a documented config dataclass field becomes a command-line option (CleanRL's ``Args``).

A config dataclass (`dlsched.papers.deeprm.config.ReinforceConfig`, …) documents each field
with a docstring under it; `dlsched.commands.config_options` turns every field into a
``--field-name`` option whose help is that docstring, so the help text lives once. A field may
say more with ``Annotated[type, Opt(...)]``: bounds, other option names, a parser for
structured values, or that it is not an option. No PyTorch, no Typer: library config modules
import this.

Example::

    @dataclass
    class Config:
        lr: Annotated[float, Opt(min=0.0, max=10.0)] = 1e-3
        \"\"\"RMSProp learning rate.\"\"\"
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Opt", "field_docs"]


@dataclass(frozen=True)
class Opt:
    """What a field's option needs beyond its type, default and docstring.

    Attributes:
        flags: the option's names (default ``--field-name``; a boolean's may be
            ``"--on/--off"``).
        min: smallest value (numbers; each element of a tuple).
        max: largest value.
        parse: turns the option's text into the field's value (raises ``ValueError``); the
            option then takes text. Called as ``parse(text, option_name)``.
        metavar: how the help shows the value of a parsed option.
        choices: the values a text field accepts (a ``Literal`` type says the same).
        cli: False: the field is not an option (set by the program).
        required: the option has no default.
    """

    flags: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    parse: Callable[[str, str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    cli: bool = True
    required: bool = False


def field_docs(cls: type) -> dict[str, str]:
    """The docstrings under the fields of dataclass ``cls`` (and its bases), joined into one
    line each; a field without one is absent."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        node = _class_node(klass)
        body = node.body if node is not None else []
        for field_node, after in itertools.pairwise(body):
            if (
                isinstance(field_node, ast.AnnAssign)
                and isinstance(field_node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[field_node.target.id] = " ".join(after.value.value.split())
    return docs


def _class_node(klass: type) -> ast.ClassDef | None:
    """The definition of ``klass`` in its module's syntax tree (found by its qualified name),
    or None without a source file (a built-in, a class made at run time)."""
    module = sys.modules.get(klass.__module__)
    try:
        path = inspect.getsourcefile(module) if module is not None else None
    except TypeError:  # a built-in module
        return None
    if path is None:
        return None
    nodes: list[ast.stmt] = _module_tree(path).body
    found: ast.ClassDef | None = None
    for name in klass.__qualname__.split("."):
        found = next((n for n in nodes if isinstance(n, ast.ClassDef) and n.name == name), None)
        if found is None:
            return None
        nodes = found.body
    return found


@functools.cache
def _module_tree(path: str) -> ast.Module:
    """The syntax tree of the source file at ``path``, parsed once per process: every config
    class of a module shares it (parsing dominated the CLI's start-up when each class's
    source was looked up and parsed on its own)."""
    with open(path, encoding="utf-8") as source:
        return ast.parse(source.read(), filename=path)
